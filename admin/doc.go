// Package admin is shardmesh's admin protocol on /shardmesh/admin/1: a server in every
// daemon and the typed client that shardctl and the dashboard share. Each call is one
// stream: a Request frame, then a Response frame, or several for the streaming calls
// (watch, and shutdown following its progress), every one but the last marked "more".
//
// Who may call what: calls that change the cluster (shutdown, leave, down) need an admin
// identity, a key made by shardctl keygen admin whose peer id the member lists in
// admin-allow; a refusal says why and is logged with the caller's peer id. Calls that only
// read (members, types, region-state, stats, locate, health, watch) and messages to
// entities (tell, ask, bench) are answered to admins and to the cluster's members, and,
// with admin-read-only-open (the default), to any peer that reaches the member at all,
// which means it holds the cluster key and passes the allow-list, and so could read the
// cluster's gossip anyway.
//
// stats and locate fan out: the answering member asks the other members' admin servers,
// each within shard-region-query-timeout, and names the members that did not answer
// instead of passing a smaller number off as the whole (the code is PARTIAL then).
package admin
