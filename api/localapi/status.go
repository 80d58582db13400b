package localapi

import "time"

// Status is the JSON of GET /v1/status: this Delta, its peers and roads,
// its counters and what its journal keeps.
type Status struct {
	Self Self `json:"self"`
	// Nearby are Deltas heard on the local network whose IDs are not
	// paired with this computer (static mode with IDs), with the command
	// that would pair each.
	Nearby []Nearby `json:"nearby,omitempty"`
	// PairRequests are the computers that asked to pair with this one
	// (static mode with IDs), waiting for a person here to accept or
	// ignore them (GET /v1/pairing has the rest of pairing).
	PairRequests []PairRequest `json:"pair_requests,omitempty"`
	Version      string        `json:"version"`
	// Tailnet is nil in static mode.
	Tailnet *TailnetStatus `json:"tailnet,omitempty"`
	Peers   []PeerStatus   `json:"peers"`
	// Routes are the route book's counts: hold-down refusals, races won
	// per road, invalidations by cause, upkeep traffic.
	Routes   RouteCounters `json:"routes"`
	Counters Counters      `json:"counters"`
	// Unsettled counts the calls waiting to be settled (unknown,
	// needs_person), not dismissed.
	Unsettled int `json:"unsettled"`
	// NeedsYou counts those of them that need a person (needs_person):
	// the rest Delta is asking owners about.
	NeedsYou int `json:"needs_you"`
	// Dismissed counts the calls a person set aside: their outcome is not
	// known yet, and Delta still asks their owners.
	Dismissed int `json:"dismissed"`
	// ReceivedToCheck counts the calls this computer's apps received in
	// the last 7 days that a person here should check (Receipt.ToCheck).
	ReceivedToCheck int `json:"received_to_check"`
	// Notices are what a person should know about this Delta (a port it
	// could not take).
	Notices []string `json:"notices"`
	// Forwards are this computer's forwards to its peers' apps (DESIGN
	// §2b), open or not.
	Forwards []Forward     `json:"forwards"`
	Journal  JournalStatus `json:"journal"`
	Cache    struct {
		Entries int   `json:"entries"`
		Bytes   int64 `json:"bytes"`
	} `json:"cache"`
	// Transfers are those that have run for a second or more: a big read,
	// call or session, with road, bytes and rate.
	Transfers []Transfer `json:"transfers"`
	// Sessions counts the sessions open (WebSocket and other upgrades),
	// both this computer's apps' and those its owner apps hold for peers.
	Sessions int `json:"sessions"`
}

// TailnetStatus is what Status says of the tailnet.
type TailnetStatus struct {
	// State is tsnet's backend state: NeedsLogin, Starting, Running, …
	State    string `json:"state"`
	LoginURL string `json:"login_url,omitempty"` // open it to log in
	// ControlURL is the control server Delta logs in to.
	ControlURL string `json:"control_url"`
	// Account is the login this computer is in the tailnet as, and
	// Tailnet the tailnet's name, once logged in.
	Account string `json:"account,omitempty"`
	Tailnet string `json:"tailnet,omitempty"`
	// Message says why peers are missing, if they are.
	Message string   `json:"message"`
	Pin     string   `json:"tls_pin"`
	LAN     []string `json:"lan_listeners"`
	// LogUpload reports whether tsnet uploads its log to Tailscale (only
	// when a person opted in).
	LogUpload bool `json:"log_upload"`
}

// PeerStatus is one peer and its roads.
type PeerStatus struct {
	Name string `json:"name"`
	// Road is the current choice, "" when there is none.
	Road  string       `json:"road,omitempty"`
	Roads []RoadStatus `json:"roads"`
}

// Nearby is a Delta heard on the local network (its announcement) whose
// ID is not paired with this computer. An announcement proves nothing:
// pairing it is a person's choice.
type Nearby struct {
	ID      string    `json:"id"`
	Name    string    `json:"name,omitempty"` // the name it gives itself
	Road    string    `json:"road"`
	Address string    `json:"address"`
	SeenAt  time.Time `json:"seen_at"`
	// Pair is the command that would pair it here.
	Pair string `json:"pair"`
}

// PairRequest is a computer that asked to pair with this one: it proved
// its ID (the TLS handshake) and says its name, which is its word only,
// and the address its peer API is at. Nothing is paired until a person
// here accepts it.
type PairRequest struct {
	ID string `json:"id"`
	// Name is the name it gives itself, "" when that is a paired peer's
	// (a stranger never shows as one).
	Name    string    `json:"name"`
	Road    string    `json:"road"`
	Address string    `json:"address"`
	At      time.Time `json:"at"` // when it last asked
}

// Pairing is GET /v1/pairing: static mode's pairing, this computer's ID,
// the computers asking to pair with it and the peers it has paired, each
// with whether the peer has paired it back.
type Pairing struct {
	Self     Self          `json:"self"`
	Requests []PairRequest `json:"requests"`
	Peers    []PairedPeer  `json:"peers"`
}

// The states of a PairedPeer.
const (
	// PairPaired: both have said yes (the peer's door admits this
	// computer: a road to it is up, or it said so when asked).
	PairPaired = "paired"
	// PairAsked: the peer was asked and said a person there has not
	// accepted yet.
	PairAsked = "asked"
	// PairWaiting: paired here; the peer has not been reached since (it
	// could not be asked, or Delta restarted): Detail says what is known.
	PairWaiting = "waiting"
)

// PairedPeer is a peer this computer has paired (config.json's peers).
type PairedPeer struct {
	Name  string            `json:"name"`
	ID    string            `json:"id"`
	Roads map[string]string `json:"roads"`
	State string            `json:"state"`
	// Detail says why the state is what it is, in words.
	Detail string `json:"detail,omitempty"`
	// AskedAt is when this computer last asked the peer to pair.
	AskedAt time.Time `json:"asked_at,omitzero"`
}

// StateWords says p's state to a person: paired, waiting for a person
// there to accept, or waiting and why.
func (p PairedPeer) StateWords() string {
	switch p.State {
	case PairPaired:
		return "paired"
	case PairAsked:
		return "waiting for a person on " + p.Name + " to accept"
	}
	return "waiting: " + p.Detail
}

// PairWith is the body of PUT /v1/pairs/NAME: a person here says yes to
// pairing with the computer of ID at Address (its peer API, HOST:PORT),
// by Road ("lan" or "thunderbolt"; if empty, the road whose network holds
// the address, else lan). The peer is asked at once.
type PairWith struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	Road    string `json:"road,omitempty"`
}

// Rename is the body of PUT /v1/name: this computer's new name.
type Rename struct {
	Name string `json:"name"`
}

// AcceptPair is the body of POST /v1/pair-requests/ID/accept: the name
// this computer will know the asker by (if empty, the name it gave).
type AcceptPair struct {
	Name string `json:"name,omitempty"`
}

// RoadState is what Delta believes of a road.
type RoadState string

// The road states.
const (
	// RoadUnknown: not tried since Delta learned of it, or since its
	// interface changed.
	RoadUnknown RoadState = "unknown"
	RoadUp      RoadState = "up"   // the last connect or probe worked
	RoadDown    RoadState = "down" // the last connect or probe failed
	// RoadOffline: the tailnet's map says the peer is offline (the
	// tailnet road only).
	RoadOffline RoadState = "offline"
)

// Usable reports whether a request may still try a road in state s: every
// state but down and offline.
func (s RoadState) Usable() bool { return s != RoadDown && s != RoadOffline }

// RoadHint names a known cause behind a road's last error, for which a
// person is shown what to do.
type RoadHint string

// The road hints.
const (
	// HintLocalNetwork: macOS is blocking Delta's Local Network access
	// (System Settings › Privacy & Security › Local Network).
	HintLocalNetwork RoadHint = "local_network"
)

// RoadStatus is one road to a peer.
type RoadStatus struct {
	Road      string    `json:"road"` // thunderbolt, lan or tailnet
	Address   string    `json:"address"`
	Interface string    `json:"interface,omitempty"`
	State     RoadState `json:"state"`
	RTTMillis float64   `json:"rtt_ms,omitempty"`
	// RecentRTTs are the last round trips, oldest first, for a chart.
	RecentRTTs  []float64 `json:"recent_rtt_ms,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// DroppedAt is when the road was last dropped on evidence (DESIGN
	// §2c), DroppedWhy why, in the log's words, and DropEvidence the kind
	// of evidence (connect, netwatch, probe, closed, keepalive); zero and
	// empty if it never was since Delta started.
	DroppedAt    time.Time `json:"dropped_at,omitzero"`
	DroppedWhy   string    `json:"dropped_why,omitempty"`
	DropEvidence string    `json:"drop_evidence,omitempty"`
	// Hint names a known cause of LastError, "" for none.
	Hint RoadHint `json:"hint,omitempty"`
	// Path says how the tailnet road gets there: "direct ADDR" or
	// "relayed through DERP REGION" (tailnet only).
	Path          string    `json:"path,omitempty"`
	CheckedAt     time.Time `json:"checked_at,omitzero"`
	HeldDownUntil time.Time `json:"held_down_until,omitzero"`
	// OfflineSince is when the tailnet last saw the peer, while its map
	// says the peer is offline (state offline; tailnet road only).
	OfflineSince time.Time `json:"offline_since,omitzero"`
}

// RouteCounters are a route book's counts.
type RouteCounters struct {
	HoldDownRefusals uint64            `json:"hold_down_refusals"`
	RacesWon         map[string]uint64 `json:"races_won"`     // by road
	Invalidations    map[string]uint64 `json:"invalidations"` // by cause
	// Drops counts the roads dropped on evidence, by its kind (connect,
	// netwatch, probe, closed, keepalive: DESIGN §2c).
	Drops map[string]uint64 `json:"drops"`
	// Upkeep is what was sent to peers only to keep the roads known, by
	// kind (probe, hello, ticket).
	Upkeep map[string]Traffic `json:"upkeep,omitempty"`
}

// Traffic is a count of requests and the bytes their connections carried,
// both ways.
type Traffic struct {
	Requests uint64 `json:"requests"`
	Bytes    uint64 `json:"bytes"`
}

// Counters are the gateway's counts since it started: reads and calls by
// outcome, calls settled by the reconciler by state, and named counters.
type Counters struct {
	Reads    map[string]uint64 `json:"reads"`
	Calls    map[string]uint64 `json:"calls"`
	Settled  map[string]uint64 `json:"settled"`
	Counters map[string]uint64 `json:"counters"`
}

// JournalStatus is what the journal keeps besides calls and receipts.
type JournalStatus struct {
	// RequestBytes are the bodies of calls kept for a person to check.
	RequestBytes int64 `json:"request_bytes"`
	// Continuity is what the journal vouches for.
	Continuity Continuity `json:"continuity"`
	// Behind, when the journal could not write (a full disk), counts the
	// outcomes it holds in memory until it can.
	Behind *Behind `json:"behind,omitempty"`
}

// Continuity is the time a journal vouches for.
type Continuity struct {
	// Since is the start of the time the journal vouches for: its birth,
	// or a break.
	Since time.Time `json:"since"`
	// Broken, if not empty, says why the journal cannot vouch for the time
	// before Since although it is older.
	Broken string `json:"broken,omitempty"`
	// FileError is the last failure to write the continuity file.
	FileError string `json:"file_error,omitempty"`
}

// Behind is what the journal holds in memory because it could not write
// it.
type Behind struct {
	Held     int       `json:"held_outcomes"`
	Since    time.Time `json:"since"`
	Error    string    `json:"error"`
	DiskFull bool      `json:"disk_full"`
}

// TransferKind is what a transfer carries.
type TransferKind string

// The kinds of transfer.
const (
	TransferRead    TransferKind = "read"    // a read's answer
	TransferCall    TransferKind = "call"    // a call's body
	TransferSession TransferKind = "session" // an upgraded connection (WebSocket)
)

// Transfer is a transfer that has run for a second or more.
type Transfer struct {
	Kind  TransferKind `json:"kind"`
	Peer  string       `json:"peer"`
	App   string       `json:"app"`
	Path  string       `json:"path"`
	Road  string       `json:"road"`
	Since time.Time    `json:"since"`
	// Sent and Received are bytes towards the peer and from it.
	Sent     int64 `json:"sent_bytes"`
	Received int64 `json:"received_bytes"`
	// Rate is bytes a second both ways, averaged since it began.
	Rate float64 `json:"bytes_per_second"`
}

// Receipt is a call this computer's apps received (GET /v1/receipts).
type Receipt struct {
	RequestID string `json:"request_id"`
	// Caller is the calling computer's name; CallerNode its node ID.
	Caller     string `json:"caller"`
	CallerNode string `json:"caller_node"`
	// CallerApp names the app there that made the call, as the caller's
	// Delta said it (its X-Delta-App, else its User-Agent's product), or "".
	CallerApp string `json:"caller_app"`
	App       string `json:"app"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	// State is running, answered, not_carried_out, app_unknown,
	// interrupted or fenced.
	State      string    `json:"state"`
	ReceivedAt time.Time `json:"received_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	// Digest names the call's method, app, path and body (its body when
	// only its size is kept).
	Digest string `json:"digest,omitempty"`
	// ToCheck: the app may or may not have acted (app_unknown,
	// interrupted) and nobody has said what happened: a person here
	// should check the app, then mark it checked.
	ToCheck bool `json:"to_check"`
	// Request is what the call carried, as the app got it (without
	// Delta's own headers), while kept.
	Request *SentRequest `json:"request,omitempty"`
	// Checked: a person here marked it checked.
	Checked *ReceiptCheck `json:"checked,omitempty"`
	// CallerSettled: the caller's person settled the call, and the
	// caller's Delta told this one.
	CallerSettled *CallerSettlement `json:"caller_settled,omitempty"`
}

// ReceiptCheck is a person's check of a receipt on this computer.
type ReceiptCheck struct {
	// By is where: "the status page" or "the local API".
	By   string    `json:"by"`
	At   time.Time `json:"at"`
	Note string    `json:"note,omitempty"`
}

// CallerSettlement is what a person at the caller settled a call as, told
// by the caller's Delta.
type CallerSettlement struct {
	// State is carried_out or not_carried_out.
	State string    `json:"state"`
	At    time.Time `json:"at"`
	Note  string    `json:"note,omitempty"`
}

// App is an owner app registered with this computer's Delta.
type App struct {
	App string `json:"app"`
	URL string `json:"url"`
	// Timeout is how long the app may take before its answer's head when
	// a request says no X-Delta-Timeout (DESIGN §2c): seconds, "none" for
	// no limit, or "" when it has none of its own (the caller's default
	// applies: 30 s on the local API, no limit through a forward).
	Timeout string `json:"timeout,omitempty"`
	// H2C: its Delta speaks HTTP/2 with prior knowledge to it for every
	// request (delta apps add --h2c); gRPC's always go so.
	H2C bool `json:"h2c,omitempty"`
	// Secret arrives with every forwarded request as
	// X-Delta-Forward-Secret (in the answer to PUT /v1/apps/{app} only).
	Secret    string    `json:"secret,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// AppRequest is the body of PUT /v1/apps/{app}.
type AppRequest struct {
	// URL is where the app listens: http://127.0.0.1:PORT.
	URL string `json:"url"`
	// Timeout is App.Timeout: seconds (as X-Delta-Timeout writes them),
	// "none", or "" for none of its own.
	Timeout string `json:"timeout,omitempty"`
	// H2C is App.H2C.
	H2C bool `json:"h2c,omitempty"`
}

// Listening is a port a program on this computer listens on that Delta
// could forward to (GET /v1/listening): what "Share an App…" and delta
// apps suggest offer.
type Listening struct {
	// Address is where it is reached on loopback (127.0.0.1:PORT or
	// [::1]:PORT); URL is the app URL to register it with.
	Address string `json:"address"`
	URL     string `json:"url"`
	// Program and PID name the program that listens, when the OS tells
	// (not for another user's process).
	Program string `json:"program,omitempty"`
	PID     int    `json:"pid,omitempty"`
	// App is the registered app already at this URL, if one is.
	App string `json:"app,omitempty"`
}

// PeerApps is what GET /v1/peer-apps/{peer} answers: the apps a paired
// peer shares with this computer, as it said just now over the pinned
// road (a Delta tells its paired peers, and no one else, which apps it
// shares), each with this computer's forward to it when there is one:
// what the page's and the menu's "Apps on Other Computers" list.
type PeerApps struct {
	Peer string    `json:"peer"`
	Apps []PeerApp `json:"apps"`
}

// PeerApp is one app a peer shares (PeerApps).
type PeerApp struct {
	App string `json:"app"`
	// Forward is this computer's forward to it, if one is open or kept.
	Forward *Forward `json:"forward,omitempty"`
}

// PingRoad is what a ping learned of one road to a peer (POST
// /v1/ping/{peer}).
type PingRoad struct {
	Road      string `json:"road"`
	Address   string `json:"address,omitempty"`
	Interface string `json:"interface,omitempty"`
	// OK reports whether the peer's Delta answered on this road.
	OK bool `json:"ok"`
	// ConnectMillis is how long the connect took (with TLS and the pin
	// check on lan and thunderbolt); AnswerMillis the round trip of the
	// ping request on that connection.
	ConnectMillis float64 `json:"connect_ms,omitempty"`
	AnswerMillis  float64 `json:"answer_ms,omitempty"`
	// Error says why not, when !OK.
	Error string `json:"error,omitempty"`
}
