package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"

	"github.com/delta-roads/delta/gateway/wire/record"
)

// NewAnswer builds the Answer to keep for a response: the body is kept
// when it is at most maxBody bytes, otherwise only its digest.
func NewAnswer(status int, h http.Header, body []byte, maxBody int) *record.Answer {
	sum := sha256.Sum256(body)
	a := &record.Answer{Status: status, Headers: h.Clone(), BodyDigest: hex.EncodeToString(sum[:])}
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
