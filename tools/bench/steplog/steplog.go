// Package steplog reads the steps of calls from Delta's log, as
// delta run --trace-calls writes them ("call step" lines, at debug, on
// the caller's side and the owner's), and gives each step to the next at
// its median: tools/bench's breakdown of a call's time.
package steplog

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Step is one step of a call to the next, at its median.
type Step struct {
	From, To string
	P50      time.Duration
}

// Event is one line "call step" of a Delta's log.
type Event struct {
	Name string // side: step
	At   int64  // µs
}

var line = regexp.MustCompile(`msg="call step" request_id=(\S+) side=(\S+) step=("[^"]*"|\S+) t_us=(\d+)`)

// Read reads, from Delta logs, the steps of the calls whose ids begin
// with prefix, by call.
func Read(files []string, prefix string) (map[string][]Event, error) {
	events := map[string][]Event{}
	for _, name := range files {
		fh, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			m := line.FindStringSubmatch(sc.Text())
			if m == nil || !strings.HasPrefix(m[1], prefix) {
				continue
			}
			at, _ := strconv.ParseInt(m[4], 10, 64)
			events[m[1]] = append(events[m[1]], Event{Name: m[2] + ": " + strings.Trim(m[3], `"`), At: at})
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return events, nil
}

// Complete says whether every call's last step, the caller's answer to its
// app, is in.
func Complete(events map[string][]Event) bool {
	for _, ev := range events {
		if !slices.ContainsFunc(ev, func(e Event) bool { return e.Name == "caller: answered" }) {
			return false
		}
	}
	return true
}

// Steps is the p50 of each step to the next, in the order most calls
// met them, and the p50 of the whole traced span.
func Steps(events map[string][]Event) ([]Step, time.Duration) {
	orders := map[string]int{}
	gaps := map[[2]string][]time.Duration{}
	var spans []time.Duration
	for _, ev := range events {
		sort.SliceStable(ev, func(i, j int) bool { return ev[i].At < ev[j].At })
		var names []string
		for i, e := range ev {
			names = append(names, e.Name)
			if i > 0 {
				k := [2]string{ev[i-1].Name, e.Name}
				gaps[k] = append(gaps[k], time.Duration(e.At-ev[i-1].At)*time.Microsecond)
			}
		}
		orders[strings.Join(names, "\n")]++
		spans = append(spans, time.Duration(ev[len(ev)-1].At-ev[0].At)*time.Microsecond)
	}
	var order string
	for o, n := range orders {
		if n > orders[order] || n == orders[order] && o < order {
			order = o
		}
	}
	names := strings.Split(order, "\n")
	var steps []Step
	for i := 1; i < len(names); i++ {
		steps = append(steps, Step{From: names[i-1], To: names[i], P50: Median(gaps[[2]string{names[i-1], names[i]}])})
	}
	return steps, Median(spans)
}

// Median is the middle of d (the upper one of an even count); 0 for none.
func Median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
