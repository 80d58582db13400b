package kit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/delta-roads/delta/api/localapi"
)

// APIError is Delta refusing a request of its own API (calls journal,
// apps, status): Outcome and Detail say why.
type APIError struct {
	Status  int
	Outcome string
	Detail  string
}

func (e *APIError) Error() string { return e.Outcome + ": " + e.Detail }

// api sends a request to Delta's own API and decodes a JSON answer into
// out (if not nil).
func (c *Client) api(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("kit: %w", err)
		}
	}
	resp, _, err := c.send(ctx, c.reads, method, path, bytes.NewReader(body), int64(len(body)), http.Header{"Content-Type": {"application/json"}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.Header.Get(HeaderOutcome) == "" {
		// Every answer of Delta's carries it; this one is not Delta's.
		return fmt.Errorf("kit: %s answered %s %s with %s and no %s: it is not Delta's local API", resp.Request.URL.Host, method, path, resp.Status, HeaderOutcome)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("kit: read Delta's answer to %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var eb localapi.ErrorBody
		_ = json.Unmarshal(b, &eb) // the status says enough without it
		if eb.Detail == "" {
			eb.Detail = fmt.Sprintf("Delta answered %s %s with %s", method, path, resp.Status)
		}
		return &APIError{Status: resp.StatusCode, Outcome: resp.Header.Get(HeaderOutcome), Detail: eb.Detail}
	}
	if out == nil || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("kit: Delta's answer to %s %s is not the JSON expected: %w", method, path, err)
	}
	return nil
}

// CallRecord returns call id's record, with its attempts and history.
func (c *Client) CallRecord(ctx context.Context, id string) (*CallRecord, error) {
	var r localapi.Call
	err := c.api(ctx, http.MethodGet, localapi.CallPath(id), nil, &r)
	return &r, err
}

// Calls lists calls, newest first: state "" for all, "unsettled" (those
// waiting to be settled, not set aside), "dismissed" (those a person set
// aside, still asked about), or a call state.
func (c *Client) Calls(ctx context.Context, state string) ([]CallRecord, error) {
	var out struct {
		Calls []localapi.Call `json:"calls"`
	}
	q := ""
	if state != "" {
		q = "?state=" + url.QueryEscape(state)
	}
	err := c.api(ctx, http.MethodGet, localapi.CallsPath+q, nil, &out)
	return out.Calls, err
}

// CallRecord is a call as this computer's journal has it: its state, its
// attempts and history, what it sent (Request) and the owner's kept
// answer (Answer: Status, Header, Body). The same type as the local API's
// (api/localapi), named here so that go doc ./kit shows it.
type CallRecord = localapi.Call

// StoredAnswer is an owner app's answer as a call's record keeps it,
// shaped as Answer is (Status, Header, Body).
type StoredAnswer = localapi.Answer

// A call's states, as its record's State says them (CallRecord,
// WaitSettled, Calls): the same words in every kit
// (kit/contract/operations.json).
const (
	StateSending       = string(localapi.CallSending)
	StateAnswered      = string(localapi.CallAnswered)
	StateUnavailable   = string(localapi.CallUnavailable)
	StateUnknown       = string(localapi.CallUnknown)
	StateCarriedOut    = string(localapi.CallCarriedOut)
	StateNotCarriedOut = string(localapi.CallNotCarriedOut)
	StateNeedsPerson   = string(localapi.CallNeedsPerson)
)

// WaitSettled waits until call id's outcome is known for good or needs a
// person, and returns its record: carried_out (with the owner's answer),
// not_carried_out, needs_person, or, for a call that was not unknown,
// answered or unavailable. It returns ctx's error when ctx ends first.
func (c *Client) WaitSettled(ctx context.Context, id string) (*CallRecord, error) {
	for {
		wait := 600 * time.Second
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, max(time.Until(dl), time.Second))
		}
		var r localapi.Call
		err := c.api(ctx, http.MethodGet, fmt.Sprintf("%s?wait=%.0f", localapi.CallPath(id), wait.Seconds()), nil, &r)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if !r.Waiting() {
			return &r, nil
		}
		if ctx.Err() != nil {
			return &r, ctx.Err()
		}
	}
}

// Ask makes Delta ask the owner about an unsettled call now.
func (c *Client) Ask(ctx context.Context, id string) (*CallRecord, error) {
	var r localapi.Call
	err := c.api(ctx, http.MethodPost, localapi.CallActionPath(id, localapi.ActionAsk), nil, &r)
	return &r, err
}

// Dismiss sets an unsettled call aside: hidden from the menu, still asked
// about.
func (c *Client) Dismiss(ctx context.Context, id string) (*CallRecord, error) {
	var r localapi.Call
	err := c.api(ctx, http.MethodPost, localapi.CallActionPath(id, localapi.ActionDismiss), nil, &r)
	return &r, err
}

// Forget drops what call id sent (its kept headers and body) from the
// journal, for a body that should not be kept; the call's record stays.
func (c *Client) Forget(ctx context.Context, id string) (*CallRecord, error) {
	var r localapi.Call
	err := c.api(ctx, http.MethodPost, localapi.CallActionPath(id, localapi.ActionForget), nil, &r)
	return &r, err
}

// ForgetReceived drops what the call id that this computer received
// carried (its kept headers and body; its size stays); caller names the
// calling computer when two used the id ("" otherwise). It returns the
// receipts under the id.
func (c *Client) ForgetReceived(ctx context.Context, id, caller string) ([]localapi.Receipt, error) {
	var out struct {
		Receipts []localapi.Receipt `json:"receipts"`
	}
	var in any
	if caller != "" {
		in = map[string]string{"caller": caller}
	}
	err := c.api(ctx, http.MethodPost, localapi.ReceiptActionPath(id, localapi.ActionForget), in, &out)
	return out.Receipts, err
}

// Settle records a person's settlement of an unknown or
// needs_person call: state is "carried_out" (it happened) or
// "not_carried_out" (it did not), with what they saw. Delta then stops
// asking the owner. A call in another state is an *APIError with Outcome
// "conflict".
func (c *Client) Settle(ctx context.Context, id, state, note string) (*CallRecord, error) {
	var r localapi.Call
	err := c.api(ctx, http.MethodPost, localapi.CallActionPath(id, localapi.ActionSettle), map[string]string{"state": state, "note": note}, &r)
	return &r, err
}

// Receipts lists what this computer's apps received in the last 7 days,
// with what each call carried, those to check first (ToCheck) at the top;
// state, if not empty, keeps one state.
func (c *Client) Receipts(ctx context.Context, state string) ([]localapi.Receipt, error) {
	var out struct {
		Receipts []localapi.Receipt `json:"receipts"`
	}
	q := ""
	if state != "" {
		q = "?state=" + url.QueryEscape(state)
	}
	err := c.api(ctx, http.MethodGet, localapi.ReceiptsPath+q, nil, &out)
	return out.Receipts, err
}

// Receipt returns the receipts under request id, with what their calls
// carried: one, unless two callers used the same id. An id this computer
// did not receive is an *APIError with Outcome "not_found".
func (c *Client) Receipt(ctx context.Context, id string) ([]localapi.Receipt, error) {
	var out struct {
		Receipts []localapi.Receipt `json:"receipts"`
	}
	err := c.api(ctx, http.MethodGet, localapi.ReceiptPath(id), nil, &out)
	return out.Receipts, err
}

// CheckReceipt records that a person here checked what the app did with
// call id (the receipt is no longer one to check), with their note.
// caller names the calling computer, needed only when two used the id. A
// call the app is still working on is an *APIError with Outcome
// "conflict".
func (c *Client) CheckReceipt(ctx context.Context, id, caller, note string) (*localapi.Receipt, error) {
	var r localapi.Receipt
	err := c.api(ctx, http.MethodPost, localapi.ReceiptActionPath(id, localapi.ActionCheck), map[string]string{"note": note, "caller": caller}, &r)
	return &r, err
}

// RegisterApp registers (or re-points) the owner app name at url
// ("http://127.0.0.1:PORT"); the answer holds the forward secret, kept
// across re-registrations.
func (c *Client) RegisterApp(ctx context.Context, name, appURL string) (*localapi.App, error) {
	return c.PutApp(ctx, name, localapi.AppRequest{URL: appURL})
}

// PutApp registers (or re-points) the owner app name as req says: its URL,
// and its own timeout (how long it may take before its answer's head when
// a request says none: seconds, "none", or "" for none of its own).
func (c *Client) PutApp(ctx context.Context, name string, req localapi.AppRequest) (*localapi.App, error) {
	var a localapi.App
	err := c.api(ctx, http.MethodPut, localapi.AppPath(name), req, &a)
	return &a, err
}

// Apps lists the registered owner apps.
func (c *Client) Apps(ctx context.Context) ([]localapi.App, error) {
	var out struct {
		Apps []localapi.App `json:"apps"`
	}
	err := c.api(ctx, http.MethodGet, localapi.AppsPath, nil, &out)
	return out.Apps, err
}

// Listening lists the ports programs on this computer listen on that an
// app could be shared at, each with its program where the OS tells and
// the app already registered at it (GET /v1/listening; Linux today).
func (c *Client) Listening(ctx context.Context) ([]localapi.Listening, error) {
	var out struct {
		Ports []localapi.Listening `json:"ports"`
	}
	err := c.api(ctx, http.MethodGet, localapi.ListeningPath, nil, &out)
	return out.Ports, err
}

// PeerApps lists the apps peer shares with this computer, as it says now
// over the pinned road (a Delta tells its paired peers, and no one else),
// each with this computer's forward to it when there is one (GET
// /v1/peer-apps/PEER).
func (c *Client) PeerApps(ctx context.Context, peer string) ([]localapi.PeerApp, error) {
	var out localapi.PeerApps
	err := c.api(ctx, http.MethodGet, localapi.PeerAppsOf(peer), nil, &out)
	return out.Apps, err
}

// Pairing is static mode's pairing (GET /v1/pairing): this computer's
// ID, the computers asking to pair with it, and the peers it paired, each
// with whether the peer has paired it back.
func (c *Client) Pairing(ctx context.Context) (*localapi.Pairing, error) {
	var out localapi.Pairing
	err := c.api(ctx, http.MethodGet, localapi.PairingPath, nil, &out)
	return &out, err
}

// Pair is a person's yes here to the computer of w.ID at w.Address, known
// here as name (PUT /v1/pairs/NAME). The computer is asked at once; it is
// paired when a person there has said yes too (the answer's State).
func (c *Client) Pair(ctx context.Context, name string, w localapi.PairWith) (*localapi.PairedPeer, error) {
	var out localapi.PairedPeer
	err := c.api(ctx, http.MethodPut, localapi.PairPath(name), w, &out)
	return &out, err
}

// Unpair forgets peer name: its door admits it no more (DELETE
// /v1/pairs/NAME).
func (c *Client) Unpair(ctx context.Context, name string) error {
	return c.api(ctx, http.MethodDelete, localapi.PairPath(name), nil, nil)
}

// AcceptPair accepts the request to pair of the computer id, known here
// as name (if empty, the name it gave).
func (c *Client) AcceptPair(ctx context.Context, id, name string) (*localapi.PairedPeer, error) {
	var out localapi.PairedPeer
	err := c.api(ctx, http.MethodPost, localapi.PairRequestPath(id, localapi.PairAccept), localapi.AcceptPair{Name: name}, &out)
	return &out, err
}

// IgnorePair ignores the request to pair of the computer id: it is not
// shown again until Delta restarts.
func (c *Client) IgnorePair(ctx context.Context, id string) error {
	return c.api(ctx, http.MethodPost, localapi.PairRequestPath(id, localapi.PairIgnore), nil, nil)
}

// Rename gives this computer a new name (PUT /v1/name; static mode): its
// peers know it by the names they chose, which do not change.
func (c *Client) Rename(ctx context.Context, name string) (*localapi.Self, error) {
	var out localapi.Self
	err := c.api(ctx, http.MethodPut, localapi.NamePath, localapi.Rename{Name: name}, &out)
	return &out, err
}

// RemoveApp unregisters an owner app: calls to it are refused as
// not_found, nothing carried out.
func (c *Client) RemoveApp(ctx context.Context, name string) error {
	return c.api(ctx, http.MethodDelete, localapi.AppPath(name), nil, nil)
}

// Status returns this computer's Delta's status.
func (c *Client) Status(ctx context.Context) (*localapi.Status, error) {
	var s localapi.Status
	err := c.api(ctx, http.MethodGet, localapi.StatusPath, nil, &s)
	return &s, err
}

// Ping asks peer's Delta on each of its roads, each on a connection of its
// own.
func (c *Client) Ping(ctx context.Context, peer string) ([]localapi.PingRoad, error) {
	var out struct {
		Roads []localapi.PingRoad `json:"roads"`
	}
	err := c.api(ctx, http.MethodPost, localapi.PingPeerPath(peer), nil, &out)
	return out.Roads, err
}

// LoginLink mints a one-time link to the status page (60 s).
func (c *Client) LoginLink(ctx context.Context) (string, error) {
	var out struct {
		URL string `json:"url"`
	}
	err := c.api(ctx, http.MethodPost, localapi.LoginLinkPath, nil, &out)
	return out.URL, err
}

// Forward opens (or changes) this computer's forward to app on peer
// (docs/design.md §2b): a loopback URL that carries every request to that app,
// with no prefix and no token. listen is a loopback address ("" keeps the
// forward's address, or takes a free port on 127.0.0.1); token asks for
// a secret of the forward's own on it (Forward.Secret; never the local
// token).
func (c *Client) Forward(ctx context.Context, peer, app, listen string, token bool) (*localapi.Forward, error) {
	return c.PutForward(ctx, peer, app, localapi.ForwardRequest{Listen: listen, Token: token})
}

// PutForward opens (or changes) the forward to app on peer as req says:
// its address, the token, and its own timeout for an answer's head
// (seconds; "" for none: the owner app's, else no limit).
func (c *Client) PutForward(ctx context.Context, peer, app string, req localapi.ForwardRequest) (*localapi.Forward, error) {
	var f localapi.Forward
	err := c.api(ctx, http.MethodPut, localapi.ForwardPath(url.PathEscape(peer), url.PathEscape(app)), req, &f)
	return &f, err
}

// Forwards lists this computer's forwards.
func (c *Client) Forwards(ctx context.Context) ([]localapi.Forward, error) {
	var out struct {
		Forwards []localapi.Forward `json:"forwards"`
	}
	err := c.api(ctx, http.MethodGet, localapi.ForwardsPath, nil, &out)
	return out.Forwards, err
}

// RemoveForward closes and forgets the forward to app on peer.
func (c *Client) RemoveForward(ctx context.Context, peer, app string) error {
	return c.api(ctx, http.MethodDelete, localapi.ForwardPath(url.PathEscape(peer), url.PathEscape(app)), nil, nil)
}
