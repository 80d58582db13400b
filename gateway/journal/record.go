package journal

import "github.com/delta-roads/delta/gateway/record"

// The call record's vocabulary lives in package record, so that what shows
// a call needs no database; these names keep the journal's API whole.
type (
	CallState = record.CallState
	Call      = record.Call
	Attempt   = record.Attempt
	Answer    = record.Answer
	Event     = record.Event
	Request   = record.Request
)

// The caller's call states (record.Sending …).
const (
	Sending       = record.Sending
	Answered      = record.Answered
	Unavailable   = record.Unavailable
	Unknown       = record.Unknown
	CarriedOut    = record.CarriedOut
	NotCarriedOut = record.NotCarriedOut
	NeedsPerson   = record.NeedsPerson
)
