package statuspage

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/delta-roads/delta/api/localapi"
)

// pairingFor is the setup page's pairing section: GET /v1/pairing, or
// why there is none (tailnet mode pairs by logging in).
func (p *Page) pairingFor(ctx context.Context, d *setupData) {
	var v localapi.Pairing
	if err := p.api(ctx, http.MethodGet, localapi.PairingPath, nil, &v); err != nil {
		d.PairingErr = err.Error()
		return
	}
	d.Pairing = &v
	asking := map[string]bool{}
	for _, r := range v.Requests {
		asking[r.ID] = true
	}
	for _, n := range d.Snap.Nearby {
		if !asking[n.ID] {
			d.Nearby = append(d.Nearby, n)
		}
	}
}

// handlePairAction does one of the setup page's pairing actions, each one
// request of the local API: pair a computer (PUT /v1/pairs/NAME), accept
// or ignore one's request (POST /v1/pair-requests/ID/ACTION), unpair one
// (DELETE /v1/pairs/NAME).
func (p *Page) handlePairAction(w http.ResponseWriter, r *http.Request) {
	s := p.actionForm(w, r)
	if s == nil {
		return
	}
	ctx := r.Context()
	var flash, at string
	var pp localapi.PairedPeer
	form := func(k string) string { return strings.TrimSpace(r.PostForm.Get(k)) }
	switch id, action, name := r.PathValue("id"), r.PathValue("action"), r.PathValue("name"); {
	case action == "pair" && id == "" && name == "":
		name = form("name")
		w := localapi.PairWith{ID: form("id"), Address: form("address"), Road: form("road")}
		if err := p.api(ctx, http.MethodPut, localapi.PairPath(name), w, &pp); err != nil {
			flash, at = fmt.Sprintf("%s was not paired: %v", name, err), "pair"
		} else {
			flash, at = pairedWords(pp), "paired-"+pp.Name
		}
	case id != "" && (action == localapi.PairAccept || action == localapi.PairIgnore):
		in := localapi.AcceptPair{Name: form("name")}
		if err := p.api(ctx, http.MethodPost, localapi.PairRequestPath(id, action), in, &pp); err != nil {
			flash, at = fmt.Sprintf("The request was not answered: %v", err), "pair"
		} else if action == localapi.PairIgnore {
			flash, at = fmt.Sprintf("%s's request is ignored: it is not shown again until Delta restarts, and nothing is paired.", pp.Name), "pair"
		} else {
			flash, at = pairedWords(pp), "paired-"+pp.Name
		}
	case action == "rename" && id == "" && name == "":
		var self localapi.Self
		name = form("name")
		if err := p.api(ctx, http.MethodPut, localapi.NamePath, localapi.Rename{Name: name}, &self); err != nil {
			flash, at = fmt.Sprintf("This computer was not renamed: %v", err), "computer"
		} else {
			flash, at = fmt.Sprintf("This computer is %s now. Your other computers know it by the names they gave it.", self.Name), "computer"
		}
	case action == "unpair" && name != "":
		if err := p.api(ctx, http.MethodDelete, localapi.PairPath(name), nil, nil); err != nil {
			flash, at = fmt.Sprintf("%s was not unpaired: %v", name, err), "pair"
		} else {
			flash, at = fmt.Sprintf("%s is unpaired: this computer's door admits it no more. Unpair this computer there too.", name), "pair"
		}
	default:
		pageError(w, http.StatusNotFound, fmt.Sprintf("%q is not a pairing action of the setup page.", action))
		return
	}
	p.mu.Lock()
	s.flash = flash
	p.mu.Unlock()
	http.Redirect(w, r, s.base()+"setup#"+url.PathEscape(at), http.StatusSeeOther)
}

// pairedWords says what a yes here did.
func pairedWords(pp localapi.PairedPeer) string {
	switch pp.State {
	case localapi.PairPaired:
		return fmt.Sprintf("%s and this computer are paired.", pp.Name)
	case localapi.PairAsked:
		return fmt.Sprintf("%s is paired here, and asked: it is paired when a person on %s accepts (its menu and setup page show the request).", pp.Name, pp.Name)
	}
	return fmt.Sprintf("%s is paired here, but could not be asked: %s. Ask Again (below) asks it again.", pp.Name, pp.Detail)
}
