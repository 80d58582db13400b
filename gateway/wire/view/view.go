// Package view is what people see of a Delta, as values and words: the
// Snapshot the menu and the status page are drawn from, and the words they
// use (the overall state, ages, round-trip times, what a call's state
// means, a call's one-line name). It is pure: no network, no database.
package view

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// TailnetSummary is what the menu and the status page show of the tailnet.
type TailnetSummary struct {
	State      string // tsnet's backend state
	LoginURL   string // open it to log in, when NeedsLogin
	Message    string // why peers are missing, if they are
	NeedsLogin bool   // a person has to log in or be approved
	// Account and Tailnet are whom it is logged in as, and to which
	// tailnet, once it runs; ControlURL its control server.
	Account, Tailnet, ControlURL string
}

// Snapshot is everything the menu and the status page show, read at once.
type Snapshot struct {
	Self    localapi.Self
	Version string
	// Tailnet is nil in static mode.
	Tailnet *TailnetSummary
	Peers   []localapi.PeerStatus
	// Nearby are Deltas heard on the local network whose IDs are not
	// paired (static mode's local discovery).
	Nearby []localapi.Nearby
	// PairRequests are the computers asking to pair with this one.
	PairRequests []localapi.PairRequest
	// Unsettled are the calls waiting for reconciliation or a person that
	// nobody dismissed, newest first.
	Unsettled []*record.Call
	// Dismissed are unsettled calls a person set aside (still reconciled).
	Dismissed []*record.Call
	// Recent are the newest calls in any state, newest first.
	Recent []*record.Call
	// Settled are the calls settled after an unknown outcome in the last
	// day (by the reconciler or a person), most recently settled first.
	Settled []*record.Call
	// UnsettledMore, SettledMore and ReceivedMore: there are more than
	// Unsettled with Dismissed, Settled and Received list (they are
	// capped); counts of them say "or more".
	UnsettledMore, SettledMore, ReceivedMore bool
	// Received are the calls this computer's apps received from its peers
	// in the last 7 days, those a person may have to check first.
	Received []Received
	// Apps are the owner apps registered here.
	Apps []App
	// Forwards are this computer's forwards to its peers' apps.
	Forwards []localapi.Forward
	// JournalWarning, if not empty, says that this computer's journal
	// cannot vouch for the calls received before some time.
	JournalWarning string
	// JournalBehind, if not empty, says that the journal could not write
	// (a full disk) and holds outcomes in memory.
	JournalBehind string
	// JournalDiskFull: the journal could not write because the disk is
	// full.
	JournalDiskFull bool
	// Notices are what a person should know about this Delta (a port it
	// could not take and the one it took instead).
	Notices []string
	// Transfers are those that have run for a second or more (a big read,
	// call or session), oldest first.
	Transfers []localapi.Transfer
}

// Received is one call this computer received (an owner's receipt).
type Received struct {
	CallerName string // the calling computer
	Caller     string // its node ID
	CallerApp  string // the app there that made the call, or ""
	RequestID  string
	App        string
	Method     string
	Path       string
	State      proto.ReceiptState
	ReceivedAt time.Time
	UpdatedAt  time.Time
	Digest     string
	// ToCheck: a person here should check the app (journal.Receipt.ToCheck).
	ToCheck bool
	// Request is what the call carried, for the receipts a person looks
	// at (to check, checked, settled at the caller); nil for the others
	// or when not kept.
	Request *record.Request
	// CheckedBy/At/Note: a person here checked it.
	CheckedBy string
	CheckedAt time.Time
	CheckNote string
	// CallerSettled (carried_out, not_carried_out), At and Note: a person
	// at the caller settled it.
	CallerSettled     string
	CallerSettledAt   time.Time
	CallerSettledNote string
}

// App is a registered owner app.
type App struct {
	Name string
	URL  string
}

// ReceivedWords says what a receipt's state means to a person; toCheck
// adds what the person should do when nobody has said what happened yet.
func ReceivedWords(state proto.ReceiptState, toCheck bool) string {
	w := receivedWords(state)
	if toCheck {
		w += ": check the app"
	}
	return w
}

// NotKept says why a received call shows nothing of what it carried,
// without guessing which reason it was: the receipt cannot tell.
const NotKept = "not kept: what a received call carried is kept while it is to check and 7 days after it arrived, the oldest going first past 32 MiB; " +
	"a body that never arrived whole, a call received before Delta kept them, or one the journal could not write has none"

// OwnerWords says what an owner's word on a call (a receipt state, or
// never_arrived, expired) means to a person.
func OwnerWords(state string) string {
	switch proto.ReceiptState(state) {
	case proto.ReceiptNeverArrived:
		return "it never arrived"
	case proto.ReceiptExpired:
		return "it keeps no record that old"
	}
	return receivedWords(proto.ReceiptState(state))
}

func receivedWords(state proto.ReceiptState) string {
	switch state {
	case proto.ReceiptRunning:
		return "the app is working on it"
	case proto.ReceiptAnswered:
		return "the app answered"
	case proto.ReceiptNotCarriedOut:
		return "not carried out (the app was not listening)"
	case proto.ReceiptAppUnknown:
		return "the app took it and its connection broke before it answered"
	case proto.ReceiptInterrupted:
		return "Delta restarted while the app worked on it"
	case proto.ReceiptFenced:
		return "never arrived; the id is fenced"
	}
	return string(state)
}

// Excerpt is a short, one-line excerpt of a request body for people: the
// text itself when it is text, else its size.
func Excerpt(r *record.Request, n int) string {
	if r == nil {
		return ""
	}
	if r.Forgotten {
		return fmt.Sprintf("%d bytes (forgotten at a person's request)", r.Size)
	}
	if r.Truncated {
		return KeptSize(r)
	}
	if len(r.Body) == 0 {
		return "no body"
	}
	if !IsText(r.Body) {
		return fmt.Sprintf("%d bytes of binary", r.Size)
	}
	return Clip(strings.Join(strings.Fields(string(r.Body)), " "), n)
}

// KeptSize says what is kept of a request body that is not (Truncated):
// one over 64 KiB keeps its size and digest; one that streamed as it
// came (a gRPC call's, docs/protocol.md §1c) its size once it ended whole,
// else nothing.
func KeptSize(r *record.Request) string {
	switch {
	case r.Size > record.MaxKeptBody:
		return fmt.Sprintf("%d bytes (over 64 KiB: only the size and digest are kept)", r.Size)
	case r.Size > 0:
		return fmt.Sprintf("%d bytes (it streamed as it came: only its size is kept)", r.Size)
	}
	return "not kept (it streamed as it came; its size is kept once it ends whole)"
}

// IsText reports whether b is text a person can read: valid UTF-8 without
// control characters other than whitespace.
func IsText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
	}
	return true
}

// Level is the overall state the icon shows.
type Level string

// The icon's four states, in the order a person should care about them;
// the tray has an icon for each (Levels).
const (
	OK       Level = "ok"        // every peer reachable, nothing waits on anyone
	Degraded Level = "degraded"  // a peer unreachable, or the tailnet needs a login
	Asking   Level = "asking"    // Delta asks owners about writes whose outcome is unknown: nothing to do
	NeedsYou Level = "needs-you" // a write needs a person, or a received call is to check
)

// Levels are the icon's states.
var Levels = []Level{OK, Degraded, Asking, NeedsYou}

// Groups are a snapshot's calls by what a person must do (the page's and
// the menu's sections): those that need a person, and those Delta is
// asking about (set aside or not).
type Groups struct {
	NeedsYou []*record.Call // needs_person: the owner cannot say; a person must
	Asking   []*record.Call // unknown, not set aside: Delta asks the owner
	SetAside []*record.Call // unknown, set aside: still asked about, off the menu
	ToCheck  int            // received calls a person here should check
}

// Group sorts a snapshot's unsettled calls by what a person must do.
func Group(s Snapshot) Groups {
	g := Groups{SetAside: s.Dismissed, ToCheck: ToCheck(s)}
	for _, c := range s.Unsettled {
		if c.State == record.NeedsPerson {
			g.NeedsYou = append(g.NeedsYou, c)
		} else {
			g.Asking = append(g.Asking, c)
		}
	}
	return g
}

// Overall sums a snapshot up for the icon, the menu's first line and the
// page's headline, from the same lists the page and the menu show:
// NeedsYou when a write needs a person or a received call is to check,
// Asking when Delta asks owners about writes, Degraded when a peer has no
// road up, else OK. "All well" only when every peer's current road is
// known to be up; a road not checked yet is "Reaching studio…".
func Overall(s Snapshot) (level Level, headline string) {
	g := Group(s)
	atLeast := "" // the unsettled list is capped: either group may hold more
	if s.UnsettledMore {
		atLeast = "at least "
	}
	var parts []string
	if n := len(g.NeedsYou); n > 0 {
		parts = append(parts, fmt.Sprintf("%s%d write%s need%s you", atLeast, n, plural(n), map[bool]string{true: "s"}[n == 1]))
	}
	if n := g.ToCheck; n > 0 {
		atLeast := ""
		if s.ReceivedMore && n == len(s.Received) { // those to check come first: all listed are, and more are not listed
			atLeast = "at least "
		}
		parts = append(parts, fmt.Sprintf("%s%d received call%s to check", atLeast, n, plural(n)))
	}
	if len(parts) > 0 {
		if n := len(g.Asking); n > 0 {
			parts = append(parts, fmt.Sprintf("asking about %s%d more", atLeast, n))
		}
		return NeedsYou, strings.Join(parts, " · ")
	}
	if n := len(g.Asking); n > 0 {
		return Asking, fmt.Sprintf("Asking %s about %s%d write%s", owners(g.Asking), atLeast, n, plural(n)) + setAside(s)
	}
	var down, checking []string
	for _, p := range s.Peers {
		switch {
		case !PeerReachable(p):
			down = append(down, p.Name)
		case !currentRoadUp(p):
			checking = append(checking, p.Name)
		}
	}
	switch {
	case s.Tailnet != nil && s.Tailnet.NeedsLogin:
		return Degraded, "Not logged in to the tailnet"
	case len(down) == 1:
		return Degraded, down[0] + " is unreachable"
	case len(down) > 1:
		return Degraded, fmt.Sprintf("%d peers are unreachable", len(down))
	case len(s.Peers) == 0:
		return OK, "Delta is running; no peers yet"
	case len(checking) == 1:
		return OK, "Reaching " + checking[0] + "…"
	case len(checking) > 1:
		return OK, fmt.Sprintf("Reaching %d peers…", len(checking))
	}
	return OK, fmt.Sprintf("All well: %d peer%s reachable", len(s.Peers), plural(len(s.Peers))) + setAside(s)
}

// owners names the peers calls went to: "studio", or "2 peers".
func owners(calls []*record.Call) string {
	seen := map[string]bool{}
	for _, c := range calls {
		seen[c.Peer] = true
	}
	if len(seen) == 1 {
		return calls[0].Peer
	}
	return fmt.Sprintf("%d peers", len(seen))
}

// ToCheck counts the received calls a person here should check.
func ToCheck(s Snapshot) int {
	n := 0
	for _, r := range s.Received {
		if r.ToCheck {
			n++
		}
	}
	return n
}

// setAside is what the headline adds while calls are set aside: their
// outcome is not known yet, so "all well" says so.
func setAside(s Snapshot) string {
	if n := len(s.Dismissed); n > 0 {
		return fmt.Sprintf(" · %d set aside, still asked about", n)
	}
	return ""
}

// currentRoadUp reports whether p's current road is known to be up: only
// then is all well with p.
func currentRoadUp(p localapi.PeerStatus) bool {
	for _, r := range p.Roads {
		if r.Road == p.Road {
			return r.State == localapi.RoadUp
		}
	}
	return false
}

// PeerReachable reports whether any road to p is not known to be down (or
// offline, as the tailnet says).
func PeerReachable(p localapi.PeerStatus) bool {
	for _, r := range p.Roads {
		if r.State.Usable() {
			return true
		}
	}
	return false
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Ago says how long d is, the way the menu does: "12 s", "4 min", "3 h",
// "2 days".
func Ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", max(int(d.Seconds()), 0))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

// Span writes a length of time for people: "2 s", "1.5 s", "10 min",
// "1 h 30 min" (not Go's "10m0s").
func Span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + " s"
	case d < time.Hour || d%time.Hour == 0 && d < 48*time.Hour:
		return Ago(d)
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int((d % time.Hour).Minutes()))
	}
	return Ago(d)
}

// FormatMillis formats a round-trip time: "0.4 ms", "12 ms".
func FormatMillis(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// Words says what state s means to a person, for the menu, notifications
// and the status page.
func Words(s record.CallState) string {
	switch s {
	case record.Sending:
		return "being sent"
	case record.Answered:
		return "answered"
	case record.Unavailable:
		return "not sent"
	case record.Unknown:
		return "outcome unknown"
	case record.CarriedOut:
		return "carried out"
	case record.NotCarriedOut:
		return "not carried out"
	case record.NeedsPerson:
		return "needs you"
	}
	return string(s)
}

// CallWords says what a call's record says happened, for people: Words,
// except for an unavailable call, which says whether anything of it left
// (any attempt's first byte written) and, when the owner replied, why it
// did not carry it out. "not sent" only where no attempt wrote a byte.
func CallWords(state record.CallState, attempts []record.Attempt) string {
	if state != record.Unavailable {
		return Words(state)
	}
	sent, reply := false, ""
	for _, a := range attempts {
		sent = sent || a.FirstByte
		if a.Reply != "" {
			reply = a.Reply
		}
	}
	if !sent {
		return "not sent"
	}
	if why := refusedWords[proto.PeerError(reply)]; why != "" {
		return "sent; not carried out: " + why
	}
	return "sent; not carried out"
}

// refusedWords says why an owner did not carry out a call it was sent, by
// its reply (docs/protocol.md, the owner's refusals).
var refusedWords = map[proto.PeerError]string{
	proto.PeerAppDown:       "the app was not listening",
	proto.PeerOwnerFailed:   "the owner's Delta failed before its app",
	proto.PeerAppNotFound:   "no such app there",
	proto.PeerNoRoom:        "no room there for its body",
	proto.PeerTooLarge:      "too large for the owner",
	proto.PeerBodyCut:       "its body did not arrive whole",
	proto.PeerBusy:          "the owner was busy",
	proto.PeerFenced:        "the owner had been asked about it first",
	proto.PeerNotDone:       "the owner says so",
	proto.PeerForbidden:     "refused at the owner's door",
	proto.PeerUnauthorized:  "refused at the owner's door",
	proto.PeerBadRequest:    "refused as malformed",
	proto.PeerReused:        "its request id was used there for another call",
	proto.PeerTooManyFences: "the owner was asked about too many calls",
}

// SettledWords says what a person's settlement (carried_out,
// not_carried_out) says happened.
func SettledWords(state string) string {
	switch record.CallState(state) {
	case record.CarriedOut:
		return "it happened (carried out)"
	case record.NotCarriedOut:
		return "it did not happen (not carried out)"
	}
	return state
}

// AppName names the app that made a call, for people: its X-Delta-App,
// else the product of its User-Agent as kept ("curl", "python-requests"),
// else "an app".
func AppName(c *record.Call) string {
	if c.CallerApp != "" {
		return Clip(c.CallerApp, 64)
	}
	if c.Request != nil {
		if ua := c.Request.Headers.Get("User-Agent"); ua != "" {
			product, _, _ := strings.Cut(ua, " ")
			product, _, _ = strings.Cut(product, "/")
			if product != "" {
				return Clip(product, 32)
			}
		}
	}
	return "an app"
}

// PageAt is a status page login link that opens the page with the card
// open (a "call-ID" or "receipt-ID") and scrolled to fragment (the card,
// or a part of it such as "settle-ID").
func PageAt(link, open, fragment string) string {
	return link + "&open=" + url.QueryEscape(open) + "#" + fragment
}

// From names who made a received call for people: "laptop's rclone", or
// "laptop" when its Delta named no app.
func (r Received) From() string {
	if r.CallerApp == "" {
		return Safe(r.CallerName)
	}
	return Safe(r.CallerName) + "'s " + Clip(r.CallerApp, 64)
}

// CallLine names a call for people: "editor → notes on studio: POST /a".
func CallLine(c *record.Call) string {
	return fmt.Sprintf("%s → %s on %s: %s", AppName(c), Safe(c.App), Safe(c.Peer), Request(c.GRPC, c.Method, c.Path, 40))
}

// Request says what a call asked, clipped to n runes of its path: "POST
// /notes/1", or a gRPC call by its service and method, "gRPC
// notes.Notes/Add" (docs/protocol.md §1c).
func Request(grpc bool, method, path string, n int) string {
	if grpc {
		return "gRPC " + Clip(strings.TrimPrefix(path, "/"), n)
	}
	return Safe(method) + " " + Clip(path, n)
}

// Safe is s as a person may be shown it, whatever an app or a peer put in
// it: line breaks and tabs become spaces, and every other control
// character and every bidirectional formatting character (an override
// such as U+202E reverses what follows it on screen: "exe.txt" shown as
// "txt.exe") is made visible as ⟨U+202E⟩. Invalid UTF-8 becomes U+FFFD.
func Safe(s string) string {
	clean := true
	for _, r := range s {
		if UnsafeRune(r) || r == utf8.RuneError {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case UnsafeRune(r):
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// UnsafeRune reports whether r may not be shown as it is: a control
// character, or a bidirectional formatting one (marks, embeddings,
// overrides, isolates).
func UnsafeRune(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r == 0x061C, r == 0x200E, r == 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// ClipWords is Clip cutting between words: an error's words are never cut
// in the middle ("connectio…"). A single word longer than n is cut as
// Clip cuts it.
func ClipWords(s string, n int) string {
	s = Safe(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	cut := string(r[:n-1])
	i := strings.LastIndexByte(cut, ' ')
	if i <= 0 {
		return cut + "…"
	}
	return strings.TrimRight(cut[:i], " ,;:") + " …"
}

// Clip shortens s, made Safe, to at most n characters, ending in "…" when
// it cut.
func Clip(s string, n int) string {
	s = Safe(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// TransferLine is one transfer in a line: "read /films/a.mov: 312.4 MiB
// at 41.0 MiB/s, 8 s".
func TransferLine(x localapi.Transfer, now time.Time) string {
	what := fmt.Sprintf("%s %s/%s", x.Kind, x.App, strings.TrimPrefix(x.Path, "/"))
	moved := x.Received
	if x.Kind == localapi.TransferCall {
		moved = x.Sent
	}
	if x.Kind == localapi.TransferSession {
		return fmt.Sprintf("session %s: %s both ways, open %s", what[len("session "):], Bytes(x.Sent+x.Received), Ago(now.Sub(x.Since)))
	}
	return fmt.Sprintf("%s: %s at %s/s, %s", what, Bytes(moved), Bytes(int64(x.Rate)), Ago(now.Sub(x.Since)))
}

// Bytes writes a byte count for people: "512 B", "12.0 MiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
