package peerclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/delta-roads/delta/api/localapi"
	"github.com/delta-roads/delta/gateway/net/h1"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// The client half of the peer API (DESIGN §4): each exchange builds its
// request from the paths the owner registers (proto.Path*), presents the
// attempt's ticket, and returns the owner's reply already classified.

// AppRequest is a request to app on the peer behind try (a read, a call
// or a session's opening): the peer API's URL for app and pathQuery
// (escaped, from "/"), header h as it goes (the caller has stripped what
// is not forwarded and set its X-Delta-* headers), and the ticket.
func AppRequest(ctx context.Context, try Try, method, app, pathQuery string, h http.Header, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+try.Cand.Address+proto.PathApps+app+pathQuery, body)
	if err != nil {
		return nil, err
	}
	req.Header = h
	try.authorize(req)
	return req, nil
}

func (t Try) authorize(req *http.Request) {
	if t.Ticket != "" {
		req.Header.Set("Authorization", proto.TicketAuth(t.Ticket))
	}
}

// Reply is an owner's reply, classified.
type Reply struct {
	Status int
	// Err is the owner Delta's X-Delta-Outcome: PeerAnswered for its
	// app's answer (a replay too), else a reply its Delta made itself; ""
	// for a reply that is not Delta's.
	Err proto.PeerError
	// Said is its Delta's own JSON (detail and guarantee) when Err is not
	// PeerAnswered.
	Said localapi.ErrorBody
	// Replayed reports whether the owner replayed a stored answer.
	Replayed bool
}

// Guarantee is what the owner promised of a reply its Delta made.
func (r Reply) Guarantee() localapi.Guarantee { return r.Said.Guarantee() }

// Detail is what the owner said, or the status when it said nothing.
func (r Reply) Detail() string {
	if r.Said.Detail != "" {
		return r.Said.Detail
	}
	return fmt.Sprintf("%d %s", r.Status, http.StatusText(r.Status))
}

// maxSaid bounds what is read of a reply Delta made itself.
const maxSaid = 64 << 10

// Classify tells what resp is. The body of a reply the owner's Delta made
// itself is read (its JSON) and closed; an answer's is left to stream.
func Classify(resp *http.Response) Reply {
	r := Reply{Status: resp.StatusCode, Err: proto.PeerError(resp.Header.Get(localapi.HeaderOutcome)),
		Replayed: resp.Header.Get(localapi.HeaderReplayed) == "true"}
	if resp.StatusCode < 100 || resp.StatusCode > 999 {
		r.Err = "" // no status an app could be told: not a reply of Delta's (found by FuzzOwnerAnswer)
	}
	if r.Err == proto.PeerAnswered {
		return r
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxSaid)) // what could be read of it is what it said
	resp.Body.Close()
	// A reply that is not Delta's JSON has no detail to quote.
	_ = json.Unmarshal(b, &r.Said)
	return r
}

// LookupRequest asks the owner behind try what it knows of call id, whose
// digest is digest ("" for a streamed body whose digest its owner has not
// said) and which
// was made at created (DESIGN §4).
func LookupRequest(ctx context.Context, try Try, id, digest string, created time.Time) (*http.Request, error) {
	q := url.Values{"digest": {digest}, "created_at": {proto.RFC3339(created)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+try.Cand.Address+proto.PathCalls+url.PathEscape(id)+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	try.authorize(req)
	return req, nil
}

// SettledRequest tells the owner behind try that a person here settled
// call id (POST /delta/v1/calls/{id}/settled, DESIGN §4).
func SettledRequest(ctx context.Context, try Try, id string, v proto.SettledJSON) (*http.Request, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+try.Cand.Address+proto.PathCalls+url.PathEscape(id)+"/settled", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	try.authorize(req)
	return req, nil
}

// ReadSettled reads the owner's answer to a SettledRequest.
func ReadSettled(peer string, resp *http.Response) (*proto.SettledReplyJSON, Reply, error) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		r := Classify(resp)
		return nil, r, fmt.Errorf("%s answered %d %s (%s)", peer, resp.StatusCode, r.Said.Error, r.Said.Detail)
	}
	r := Reply{Status: resp.StatusCode}
	v := &proto.SettledReplyJSON{}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(v); err != nil {
		return nil, r, fmt.Errorf("%s's answer is not the settlement reply JSON: %w", peer, err)
	}
	return v, r, nil
}

// ReadLookup reads the owner's answer to a LookupRequest: what it knows,
// or its refusal as a Reply and an error naming it.
func ReadLookup(peer string, resp *http.Response) (*proto.CallStateJSON, Reply, error) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		r := Classify(resp)
		return nil, r, fmt.Errorf("%s answered %d %s (%s)", peer, resp.StatusCode, r.Said.Error, r.Said.Detail)
	}
	r := Reply{Status: resp.StatusCode, Err: proto.PeerError(resp.Header.Get(localapi.HeaderOutcome))}
	b, err := io.ReadAll(io.LimitReader(resp.Body, proto.MaxQueryAnswer))
	if err != nil {
		return nil, r, fmt.Errorf("reading %s's answer: %w", peer, err)
	}
	v := &proto.CallStateJSON{}
	if err := json.Unmarshal(b, v); err != nil {
		return nil, r, fmt.Errorf("%s's answer is not the call state JSON: %w", peer, err)
	}
	return v, r, nil
}

// AppListRequest asks the owner behind try which apps it has registered
// (GET /delta/v1/app-list).
func AppListRequest(ctx context.Context, try Try) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+try.Cand.Address+proto.PathAppList, nil)
	if err != nil {
		return nil, err
	}
	try.authorize(req)
	return req, nil
}

// ReadAppList reads the owner's answer to an AppListRequest.
func ReadAppList(peer string, resp *http.Response) ([]string, Reply, error) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		r := Classify(resp)
		return nil, r, fmt.Errorf("%s answered %d %s (%s)", peer, resp.StatusCode, r.Said.Error, r.Said.Detail)
	}
	r := Reply{Status: resp.StatusCode}
	var v proto.AppListJSON
	if err := json.NewDecoder(io.LimitReader(resp.Body, proto.MaxQueryAnswer)).Decode(&v); err != nil {
		return nil, r, fmt.Errorf("%s's answer is not the app list JSON: %w", peer, err)
	}
	return v.Apps, r, nil
}

// PingRequest is a probe of the road behind try (GET /delta/v1/ping).
func PingRequest(ctx context.Context, try Try) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+try.Cand.Address+proto.PathPing, nil)
	if err != nil {
		return nil, err
	}
	try.authorize(req)
	return req, nil
}

// Ping probes the road behind try on conn, a connection of its own made
// for it (a read's pooled one may have been dialled by another road; a
// road keeper's probe keeps one of the road's own, KeptPings), and closes
// conn.
// It returns the peer's status (204 when its door took the ping) and its
// reply; an error when no answer came.
func Ping(ctx context.Context, try Try, conn net.Conn) (Reply, error) {
	req, err := PingRequest(ctx, try)
	if err != nil {
		conn.Close()
		return Reply{}, err
	}
	res, err := h1.OnceWhole(ctx, conn, req, maxSaid, h1.Options{})
	if err != nil {
		return Reply{}, err
	}
	r := Reply{Status: res.StatusCode, Err: proto.PeerError(res.Header.Get(localapi.HeaderOutcome))}
	if res.StatusCode != http.StatusNoContent {
		// A reply that is not Delta's JSON has no detail to quote.
		_ = json.Unmarshal(res.Bytes, &r.Said)
	}
	return r, nil
}
