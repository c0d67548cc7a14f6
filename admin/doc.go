// Package admin is the client of shardmesh's admin protocol on /shardmesh/admin/1, and the
// parts of the protocol both ends share: the protocol id, the framing of a call, the checks
// of what a request may name, and the phases answers report. shardctl and the dashboard
// (package tui) call members through Client; package adminserver answers in every daemon.
// Neither this package nor the protocol messages (adminpb) import the runtime (node,
// engine) or the store, so a client links neither.
//
// Each call is one stream: a Request frame, then a Response frame, or several for the
// streaming calls (watch, shutdown following its progress, data remove), every one but the
// last marked "more". Who may call what, and which calls fan out to the other members, is
// in package adminserver.
package admin
