// Package contslot is the format of a journal's continuity file
// (<journal>.continuity, gateway/state/journal): two slots of Size bytes, each a
// JSON line with its CRC-32, written in turn in place, so that a torn
// write spoils one slot and the other still holds the count before it.
package contslot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// Record is what the file holds: the journal's incarnation and its count
// of records it must not lose.
type Record struct {
	Incarnation string `json:"incarnation"`
	Receipts    int64  `json:"receipts"`
}

// Size is the size of one slot of the continuity file.
const Size = 128

// Encode is f as one slot: its JSON, a space, the JSON's CRC-32 (IEEE)
// in hex, spaces to fill, and a newline.
func Encode(f Record) ([]byte, error) {
	j, _ := json.Marshal(f)
	line := fmt.Sprintf("%s %08x", j, crc32.ChecksumIEEE(j))
	if len(line) >= Size { // an incarnation is 26 characters: the line is under 90
		return nil, fmt.Errorf("the continuity record is %d bytes, more than a slot holds", len(line))
	}
	b := bytes.Repeat([]byte{' '}, Size)
	copy(b, line)
	b[Size-1] = '\n'
	return b, nil
}

// Decode reads the continuity file: two slots, the one with the
// higher count of those whose checksum holds, or (from earlier versions)
// one JSON object.
func Decode(b []byte) (Record, error) {
	if len(b) != 2*Size {
		var f Record
		if err := json.Unmarshal(b, &f); err != nil || f.Incarnation == "" {
			return f, fmt.Errorf("neither two %d-byte slots nor a JSON object with an incarnation", Size)
		}
		return f, nil
	}
	var best *Record
	var why []string
	for i := range 2 {
		f, err := DecodeSlot(b[i*Size : (i+1)*Size])
		if err != nil {
			why = append(why, fmt.Sprintf("slot %d: %v", i+1, err))
			continue
		}
		if best != nil && best.Incarnation != f.Incarnation {
			return f, fmt.Errorf("its two slots name different journals")
		}
		if best == nil || f.Receipts > best.Receipts {
			best = &f
		}
	}
	if best == nil {
		return Record{}, errors.New(strings.Join(why, "; "))
	}
	return *best, nil
}

// DecodeSlot reads one slot, its checksum checked.
func DecodeSlot(s []byte) (Record, error) {
	var f Record
	line := strings.TrimRight(string(s), " \n")
	j, sum, ok := strings.Cut(line, " ")
	if !ok || len(sum) != 8 {
		return f, errors.New("no checksum")
	}
	want, err := strconv.ParseUint(sum, 16, 32)
	if err != nil || uint32(want) != crc32.ChecksumIEEE([]byte(j)) {
		return f, errors.New("its checksum does not match (a torn write?)")
	}
	if err := json.Unmarshal([]byte(j), &f); err != nil || f.Incarnation == "" {
		return f, errors.New("not a continuity record")
	}
	return f, nil
}
