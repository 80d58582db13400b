//go:build !linux && !darwin

package netwatch

import "errors"

func newOSMon() (osMon, error) { return nil, errors.New("no interface events on this OS") }
