package peerclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/delta-roads/delta/gateway/net/h1"
	"github.com/delta-roads/delta/gateway/wire/proto"
)

// Question puts one question to peer's Delta on any road (the Question
// kind: tried on other roads until one answers): build makes its request
// for a try, read reads the answer (a 401 renews the ticket once). It
// returns read's error, or why no road answered.
func (c *Client) Question(ctx context.Context, peer string, build func(Try) (*http.Request, error), read func(*http.Response) (Reply, error)) error {
	var lastErr, answerErr error
	answered := false
	err := c.Do(ctx, Question, peer, "", func(try Try) Result {
		cand := try.Cand
		req, err := build(try)
		if err != nil {
			answerErr = err
			return Replied()
		}
		resp, used, dialErr, err := c.RoundTrip(req, cand)
		if err != nil {
			lastErr = fmt.Errorf("%s: %w", used, err)
			answerErr = lastErr
			if h1.IsTimeout(err) && ctx.Err() != nil {
				return GaveUp(used) // past the question's own deadline no other road will do
			}
			return ExchangeFailed(used, cand, dialErr, Judge(BeforeHead, false, err), err)
		}
		var reply Reply
		reply, answerErr = read(resp)
		if reply.Status == http.StatusUnauthorized {
			return RefusedAtDoor(cand, answerErr)
		}
		answered = answerErr == nil
		return Replied()
	})
	var un *Unattempted
	switch {
	case errors.As(err, &un) && un.Road == "" && lastErr != nil:
		return lastErr
	case errors.As(err, &un):
		return un.Err
	}
	if answerErr == nil && !answered {
		answerErr = errors.New("no road answered")
	}
	return answerErr
}

// Lookup asks peer what it knows of the call with request id id (its
// digest and when it was made), on any road, never from a cache.
func (c *Client) Lookup(ctx context.Context, peer, id, digest string, created time.Time) (*proto.CallStateJSON, error) {
	var v *proto.CallStateJSON
	err := c.Question(ctx, peer, func(try Try) (*http.Request, error) {
		return LookupRequest(ctx, try, id, digest, created)
	}, func(resp *http.Response) (r Reply, err error) {
		v, r, err = ReadLookup(peer, resp)
		return r, err
	})
	return v, err
}

// AppList asks peer the names of the apps registered there.
func (c *Client) AppList(ctx context.Context, peer string) ([]string, error) {
	var apps []string
	err := c.Question(ctx, peer, func(try Try) (*http.Request, error) {
		return AppListRequest(ctx, try)
	}, func(resp *http.Response) (r Reply, err error) {
		apps, r, err = ReadAppList(peer, resp)
		return r, err
	})
	return apps, err
}

// TellSettled tells peer that a person here settled call id as v says.
func (c *Client) TellSettled(ctx context.Context, peer, id string, v proto.SettledJSON) (*proto.SettledReplyJSON, error) {
	var reply *proto.SettledReplyJSON
	err := c.Question(ctx, peer, func(try Try) (*http.Request, error) {
		return SettledRequest(ctx, try, id, v)
	}, func(resp *http.Response) (r Reply, err error) {
		reply, r, err = ReadSettled(peer, resp)
		return r, err
	})
	return reply, err
}
