package localapi

import "net/url"

// The local API's paths (DESIGN §3), one place for the server's routes,
// the kit and the command line: the constants are what the server routes
// on, and the functions spell one for a client, names escaped.
// ProofPath and ForwardsPath are with what they serve.
const (
	// PeersPath + "/PEER/APP/PATH" carries a request to app APP on PEER.
	PeersPath = "/v1/peers"
	// CallsPath lists calls (?state=, ?limit=); CallPath is one.
	CallsPath = "/v1/calls"
	// ReceiptsPath lists what this computer's apps received (?state=).
	ReceiptsPath = "/v1/receipts"
	// AppsPath lists the owner apps registered here; AppPath is one.
	AppsPath = "/v1/apps"
	// StatusPath is GET /v1/status (Status).
	StatusPath = "/v1/status"
	// MetricsPath is the counters in Prometheus' text format.
	MetricsPath = "/metrics"
	// LoginLinkPath mints a one-time link to the status page (POST).
	LoginLinkPath = "/v1/login-link"
	// PingPath + "/PEER" pings a peer's Delta on each road (POST).
	PingPath = "/v1/ping"
	// ListeningPath lists the ports programs on this computer listen on
	// that an app could be shared at (GET; Listening).
	ListeningPath = "/v1/listening"
	// PeerAppsPath + "/PEER" lists the apps PEER shares (GET; PeerApps).
	PeerAppsPath = "/v1/peer-apps"
	// PairingPath is static mode's pairing (GET; Pairing).
	PairingPath = "/v1/pairing"
	// PairsPath + "/NAME" pairs this computer with a peer (PUT, PairWith)
	// or unpairs it (DELETE).
	PairsPath = "/v1/pairs"
	// PairRequestsPath + "/ID/accept" accepts a computer's request to
	// pair (POST, AcceptPair); + "/ID/ignore" ignores it (POST).
	PairRequestsPath = "/v1/pair-requests"
	// NamePath renames this computer (PUT, Rename; static mode).
	NamePath = "/v1/name"
)

// The actions on a pair request (POST PairRequestPath).
const (
	PairAccept = "accept"
	PairIgnore = "ignore"
)

// PairPath is the path that pairs (or unpairs) peer name.
func PairPath(name string) string { return PairsPath + "/" + url.PathEscape(name) }

// PairRequestPath is the path of action on the pair request of id.
func PairRequestPath(id, action string) string {
	return PairRequestsPath + "/" + url.PathEscape(id) + "/" + url.PathEscape(action)
}

// The actions on a call (POST CallActionPath) and on a receipt (POST
// ReceiptActionPath).
const (
	ActionAsk     = "ask"
	ActionDismiss = "dismiss"
	ActionSettle  = "settle"
	ActionForget  = "forget"
	ActionCheck   = "check"
)

// PeerPath is the local API's path of app on peer, to which an app's
// path is appended.
func PeerPath(peer, app string) string {
	return PeersPath + "/" + url.PathEscape(peer) + "/" + url.PathEscape(app)
}

// CallPath is the path of the call with request id id.
func CallPath(id string) string { return CallsPath + "/" + url.PathEscape(id) }

// CallActionPath is the path of an action (ActionAsk, …) on call id.
func CallActionPath(id, action string) string { return CallPath(id) + "/" + action }

// ReceiptPath is the path of the receipts under request id id.
func ReceiptPath(id string) string { return ReceiptsPath + "/" + url.PathEscape(id) }

// ReceiptActionPath is the path of an action (ActionCheck, ActionForget)
// on receipt id.
func ReceiptActionPath(id, action string) string { return ReceiptPath(id) + "/" + action }

// AppPath is the path of the owner app name.
func AppPath(name string) string { return AppsPath + "/" + url.PathEscape(name) }

// PeerAppsOf is the path of the apps peer shares.
func PeerAppsOf(peer string) string { return PeerAppsPath + "/" + url.PathEscape(peer) }

// PingPeerPath is the path that pings peer.
func PingPeerPath(peer string) string { return PingPath + "/" + url.PathEscape(peer) }
