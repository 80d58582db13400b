package peerclient

import "testing"

// The stop rules, case by case, the way netwatch.Diff is tested.
func TestNext(t *testing.T) {
	lan := Facts{Local: true, NeedsTicket: true, RoadFault: true, Tries: 1}
	tailnet := Facts{RoadFault: true, Tries: 1}
	with := func(f Facts, edit func(*Facts)) Facts { edit(&f); return f }
	for _, c := range []struct {
		name string
		f    Facts
		want Action
	}{
		{"an answer is the answer", Facts{Kind: Call, Verdict: Done}, Stop},
		{"call: lan connect failed, nothing sent", with(lan, func(f *Facts) { f.Kind, f.Verdict = Call, Failed }), FallBack},
		{"call: first byte sent", with(lan, func(f *Facts) { f.Kind, f.Verdict, f.Sent = Call, Failed, true }), Stop},
		{"call: pinned road", with(lan, func(f *Facts) { f.Kind, f.Verdict, f.Pinned = Call, Failed, true }), Stop},
		{"call: fell back already", with(lan, func(f *Facts) { f.Kind, f.Verdict, f.FellBack = Call, Failed, true }), Stop},
		{"call: the tailnet failed", with(tailnet, func(f *Facts) { f.Kind, f.Verdict = Call, Failed }), Stop},
		{"call: door 401, renew", with(lan, func(f *Facts) { f.Kind, f.Verdict, f.Sent = Call, DoorRefused, true }), Renew},
		{"call: door 401 again", with(lan, func(f *Facts) { f.Kind, f.Verdict, f.Sent, f.Renewed = Call, DoorRefused, true, true }), Stop},
		{"call: door 401 on a road without tickets", with(tailnet, func(f *Facts) { f.Kind, f.Verdict = Call, DoorRefused }), Stop},
		{"read: lan broke after sending", with(lan, func(f *Facts) { f.Kind, f.Verdict, f.Sent = Read, Failed, true }), FallBack},
		{"read: the owner app failed", with(lan, func(f *Facts) { f.Kind, f.Verdict, f.RoadFault = Read, Failed, false }), Stop},
		{"read: door 401 again, another road", with(lan, func(f *Facts) { f.Kind, f.Verdict, f.Renewed = Read, DoorRefused, true }), FallBack},
		{"read: pinned", with(lan, func(f *Facts) { f.Kind, f.Verdict, f.Pinned = Read, Failed, true }), Stop},
		{"read: fell back already", with(lan, func(f *Facts) { f.Kind, f.Verdict, f.FellBack = Read, Failed, true }), Stop},
		{"read: the tailnet failed", with(tailnet, func(f *Facts) { f.Kind, f.Verdict = Read, Failed }), Stop},
		{"question: the tailnet failed, try another", with(tailnet, func(f *Facts) { f.Kind, f.Verdict = Question, Failed }), FallBack},
		{"question: after falling back", with(lan, func(f *Facts) { f.Kind, f.Verdict, f.FellBack, f.Tries = Question, Failed, true, 2 }), FallBack},
		{"question: out of tries", with(lan, func(f *Facts) { f.Kind, f.Verdict, f.Tries = Question, Failed, MaxQuestionTries }), Stop},
		{"question: gave up (deadline)", with(lan, func(f *Facts) { f.Kind, f.Verdict, f.RoadFault = Question, Failed, false }), Stop},
		{"question: door 401, renew", with(lan, func(f *Facts) { f.Kind, f.Verdict = Question, DoorRefused }), Renew},
		{"question: door 401 again", with(lan, func(f *Facts) { f.Kind, f.Verdict, f.Renewed = Question, DoorRefused, true }), Stop},
	} {
		if got := Next(c.f); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
