package ui

import "testing"

func TestAquaProblem(t *testing.T) {
	if aquaProblem(true, true) != nil || aquaProblem(false, false) != nil {
		t.Error("a session with the window server, or one that cannot be read, is a problem")
	}
	if err := aquaProblem(true, false); err == nil {
		t.Error("a session without the window server (SSH) is no problem")
	}
}
