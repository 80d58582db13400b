package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
)

// Answer is an owner app's answer to a call, as kept in a journal.
type Answer struct {
	Status  int
	Headers http.Header
	// Body is the answer's body. Empty with Omitted set when the body was
	// larger than the journal keeps (it is then known by BodyDigest only).
	Body []byte
	// Omitted reports whether the body was too large to keep.
	Omitted bool
	// BodyDigest is the SHA-256 of the whole body, hex.
	BodyDigest string
}

// NewAnswer builds the Answer to keep for a response: the body is kept
// when it is at most maxBody bytes, otherwise only its digest.
func NewAnswer(status int, h http.Header, body []byte, maxBody int) *Answer {
	sum := sha256.Sum256(body)
	a := &Answer{Status: status, Headers: h.Clone(), BodyDigest: hex.EncodeToString(sum[:])}
	if len(body) > maxBody {
		a.Omitted = true
	} else {
		a.Body = body
	}
	return a
}

func encodeHeaders(h http.Header) string {
	if h == nil {
		return "{}"
	}
	b, _ := json.Marshal(h)
	return string(b)
}

func decodeHeaders(s string) http.Header {
	h := http.Header{}
	if s != "" {
		json.Unmarshal([]byte(s), &h)
	}
	return h
}
