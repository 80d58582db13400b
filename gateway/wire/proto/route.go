package proto

import (
	"path"
	"strings"
)

// NamedTarget reports whether Go's ServeMux would route a request (of any
// method but CONNECT) with this escaped path to one of the two patterns
// prefix+"{a}/…/{z}" and prefix+"{a}/…/{z}/{rest...}" with names
// wildcards, given no other pattern under prefix: the path is prefix, then
// names non-empty segments, then nothing or "/" and anything, and it is
// clean (the mux redirects an unclean path instead).
//
// The local API (/v1/peers/PEER/APP/…) and the owner's door
// (/delta/v1/apps/APP/…) route their busiest requests with it before
// their muxes: ServeMux's match allocates its wildcards' values (about a
// dozen objects a read through each Delta), which neither handler reads,
// as both split the escaped path themselves (SplitTarget). prefix must
// end with "/". TestNamedTargetIsTheMuxs holds it to ServeMux's choice.
func NamedTarget(escaped, prefix string, names int) bool {
	rest, ok := strings.CutPrefix(escaped, prefix)
	if !ok || names < 1 {
		return false
	}
	for i := range names {
		seg, after, more := strings.Cut(rest, "/")
		if seg == "" || !more && i < names-1 || strings.EqualFold(seg, "%2F") {
			// A segment that unescapes to "/" alone is, to ServeMux's
			// match, a trailing slash, never a wildcard's value.
			return false
		}
		rest = after
	}
	return cleanEscaped(escaped)
}

// cleanEscaped reports whether ServeMux leaves p as it is (net/http's
// cleanPath: path.Clean, keeping a trailing slash), without allocating.
func cleanEscaped(p string) bool {
	np := path.Clean(p)
	if strings.HasSuffix(p, "/") && np != "/" {
		return len(p) == len(np)+1 && strings.HasPrefix(p, np)
	}
	return np == p
}
