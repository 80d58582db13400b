package packaging

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Notarized reads what `xcrun notarytool submit --wait --output-format
// json` printed and returns the submission's id when Apple accepted it.
// notarytool exits 0 whenever it got a verdict, Invalid included
// (electron/notarize#173), so the verdict is read here: anything but
// "Accepted" is an error naming the status and Apple's message, with the
// id (when there is one) for `notarytool log`. Lines that are not JSON
// around the object are skipped (electron/notarize#191).
func Notarized(out []byte) (id string, err error) {
	var v struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	found := false
	for line := range bytes.Lines(out) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		if json.Unmarshal(line, &v) == nil {
			found = true
		}
	}
	if !found {
		return "", fmt.Errorf("notarytool printed no JSON verdict: %q", bytes.TrimSpace(out))
	}
	if v.Status != "Accepted" {
		status := v.Status
		if status == "" {
			status = "no status"
		}
		return v.ID, fmt.Errorf("notarization was not accepted: %s (%s), submission %q", status, v.Message, v.ID)
	}
	if v.ID == "" {
		return "", fmt.Errorf("notarytool said Accepted but named no submission id: %q", bytes.TrimSpace(out))
	}
	return v.ID, nil
}
