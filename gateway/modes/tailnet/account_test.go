package tailnet_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/gatewaytest"
)

// TestAccount (issue 66): a node logged in says as whom and to which
// tailnet (GET /v1/status, the setup page's Tailnet).
func TestAccount(t *testing.T) {
	gatewaytest.NeedLoopback(t, "127.0.0.2", "127.0.0.3")
	_, laptop, _, _ := labPair(t)
	var st localapi.Status
	gatewaytest.WaitFor(t, 20*time.Second, "the account in the status", func() bool {
		json.Unmarshal(laptop.c.Must(t, "GET", localapi.StatusPath, nil).Body, &st)
		return st.Tailnet != nil && st.Tailnet.Account != ""
	})
	if st.Tailnet.State != "Running" || st.Tailnet.Tailnet == "" {
		t.Errorf("a node logged in: %+v", st.Tailnet)
	}
}
