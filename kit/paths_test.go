package kit

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/delta-roads/delta/api/localapi"
)

// pathsTable is kit/contract/paths.json, the local API's paths, actions
// and app-facing headers for the kits of other languages.
type pathsTable struct {
	Paths   map[string]string `json:"paths"`
	Actions []string          `json:"actions"`
	Headers map[string]string `json:"headers"`
}

// TestPaths holds kit/contract/paths.json to api/localapi, the one
// definition the daemon and the Go kit compile: every path (filled in
// with the same names), every action and every header, and nothing more.
func TestPaths(t *testing.T) {
	b, err := os.ReadFile("contract/paths.json")
	if err != nil {
		t.Fatal(err)
	}
	var table pathsTable
	if err := json.Unmarshal(b, &table); err != nil {
		t.Fatalf("contract/paths.json: %v", err)
	}
	const peer, app, id, action, name = "studio", "notes", "r-1", "ask", "photos"
	goPaths := map[string]string{
		"peer":           localapi.PeerPath(peer, app),
		"calls":          localapi.CallsPath,
		"call":           localapi.CallPath(id),
		"call_action":    localapi.CallActionPath(id, action),
		"receipts":       localapi.ReceiptsPath,
		"receipt":        localapi.ReceiptPath(id),
		"receipt_action": localapi.ReceiptActionPath(id, action),
		"apps":           localapi.AppsPath,
		"app":            localapi.AppPath(name),
		"forwards":       localapi.ForwardsPath,
		"forward":        localapi.ForwardPath(peer, app),
		"status":         localapi.StatusPath,
		"proof":          localapi.ProofPath,
		"login_link":     localapi.LoginLinkPath,
		"ping":           localapi.PingPeerPath(peer),
		"listening":      localapi.ListeningPath,
		"peer_apps":      localapi.PeerAppsOf(peer),
		"pairing":        localapi.PairingPath,
		"pair":           localapi.PairPath(name),
		"pair_request":   localapi.PairRequestPath(id, action),
		"name":           localapi.NamePath,
		"metrics":        localapi.MetricsPath,
	}
	fill := strings.NewReplacer("{peer}", peer, "{app}", app, "{id}", id, "{action}", action, "{name}", name)
	for k, want := range goPaths {
		tpl, ok := table.Paths[k]
		if !ok {
			t.Errorf("contract/paths.json lacks %q (%s)", k, want)
			continue
		}
		if got := fill.Replace(tpl); got != want {
			t.Errorf("contract/paths.json's %q is %s, filled in %s; localapi says %s", k, tpl, got, want)
		}
	}
	for k := range table.Paths {
		if _, ok := goPaths[k]; !ok {
			t.Errorf("contract/paths.json names %q, which localapi has not", k)
		}
	}
	if want := []string{localapi.ActionAsk, localapi.ActionDismiss, localapi.ActionSettle, localapi.ActionForget, localapi.ActionCheck}; !reflect.DeepEqual(table.Actions, want) {
		t.Errorf("contract/paths.json's actions are %v; localapi's %v", table.Actions, want)
	}
	goHeaders := map[string]string{
		"outcome": localapi.HeaderOutcome, "request_id": localapi.HeaderRequestID, "timeout": localapi.HeaderTimeout,
		"route": localapi.HeaderRoute, "app": localapi.HeaderApp, "replayed": localapi.HeaderReplayed,
		"stale": localapi.HeaderStale, "caller": localapi.HeaderCaller, "secret": localapi.HeaderSecret,
		"answer_omitted": localapi.HeaderAnswerOmitted, "journal": localapi.HeaderJournal,
	}
	if !reflect.DeepEqual(table.Headers, goHeaders) {
		t.Errorf("contract/paths.json's headers are %v; localapi's %v", table.Headers, goHeaders)
	}
}
