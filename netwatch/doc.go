// Package netwatch will watch this computer's network interfaces (netlink on
// Linux, the routing socket on macOS) and classify each as a thunderbolt, lan
// or other road, so that a dead road is dropped before a request pays for it
// (DESIGN §5).
//
// It is empty until the route-book issue lands: today the gateway's roads
// come from the state folder's config and are not watched.
package netwatch
