// Package admin is shardmesh's admin protocol on /shardmesh/admin/1: a server in every
// daemon and the typed client that shardctl and the dashboard share. Each call is one
// stream: a Request frame, then a Response frame (or several, for watch calls).
//
// Calls that only read are answered to any peer that can reach the member at all (it holds
// the cluster key and passes the allow-list). Calls that change anything need an admin
// identity whose peer id the daemon lists in --admin-allow.
package admin
