//go:build !linux

package ui

import (
	"log/slog"
	"sync"
)

// logSender logs each notification instead of showing it, saying why once.
type logSender struct {
	log  *slog.Logger
	why  string
	once sync.Once
}

func (l *logSender) Send(n Note) error {
	l.once.Do(func() { l.log.Warn("notifications are written to the log, not shown", "why", l.why) })
	l.log.Info("notification", "title", n.Title, "body", n.Body, "request_id", n.RequestID)
	return nil
}

func (l *logSender) Close() error { return nil }
