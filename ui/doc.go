// Package ui will hold the menu-bar app: a pure function from a gateway
// snapshot to a menu model, and the event loop that turns clicks into
// gateway actions (DESIGN §6).
//
// It is empty until the menu issue lands: today Delta runs headless.
package ui
