package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/delta-roads/delta/gateway/wire/proto"
	"github.com/delta-roads/delta/gateway/wire/record"
)

// tellRetry is how long a peer that could not be told of a settlement is
// left alone; a road to it that comes up tells it at once (KickPeer).
const tellRetry = time.Minute

// tellSettled tells owners (peer's, or every peer's when peer is "") of
// the settlements a person here made that they have not heard of: the
// owner then stops listing the receipt as one to check (DESIGN §4). A peer
// that cannot be reached is tried again after tellRetry, or when kicked.
// Only Run calls it.
func (rc *Reconciler) tellSettled(peer string) {
	calls, err := rc.cfg.Calls.UntoldSettlements(rc.cfg.Ctx, peer)
	if err != nil {
		if rc.cfg.Ctx.Err() == nil {
			rc.cfg.Log.Error("reconciler: list settlements to tell", "err", err)
		}
		return
	}
	now := rc.cfg.Now()
	for _, c := range calls {
		if rc.cfg.Ctx.Err() != nil {
			return
		}
		if at, ok := rc.tellFailed[c.Peer]; ok && peer != c.Peer && now.Sub(at) < tellRetry {
			continue
		}
		if err := rc.Tell(rc.cfg.Ctx, c); err != nil {
			_, failing := rc.tellFailed[c.Peer]
			rc.tellFailed[c.Peer] = now
			if rc.cfg.Ctx.Err() == nil && !failing { // said once, not each minute it stays unreachable
				rc.cfg.Log.Info("could not tell the owner that a person here settled a call; telling it when it can be reached",
					"request_id", c.RequestID, "peer", c.Peer, "err", err)
			}
			continue
		}
		delete(rc.tellFailed, c.Peer)
	}
}

// Tell tells call c's owner that a person here settled it, and records
// that it was told (also when the owner keeps no receipt of it).
func (rc *Reconciler) Tell(ctx context.Context, c *record.Call) error {
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	v := proto.SettledJSON{State: string(c.State), By: c.SettledBy, Note: c.SettleNote, At: proto.RFC3339(c.UpdatedAt)}
	reply, err := rc.cfg.Peers.TellSettled(ctx, c.Peer, c.RequestID, v)
	if err != nil {
		return err
	}
	if err := rc.cfg.Calls.SettlementTold(rc.cfg.Ctx, c.RequestID); err != nil {
		return fmt.Errorf("record that %s was told: %w", c.Peer, err)
	}
	if reply.Recorded {
		rc.cfg.Log.Info("told the owner that a person here settled a call", "request_id", c.RequestID, "peer", c.Peer, "state", c.State, "owner_receipt", reply.State)
	} else {
		rc.cfg.Log.Info("told the owner that a person here settled a call; it keeps no receipt of it", "request_id", c.RequestID, "peer", c.Peer, "state", c.State)
	}
	return nil
}
