package journal

import (
	"encoding/json"
	"net/http"
)

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
