// Package adminserver answers shardmesh's admin protocol (package admin) in a daemon: it
// authorizes each call, checks it, answers from a Backend (NodeBackend adapts a running
// node.Node), and fans stats, locate and handoffs out to the other members.
//
// Who may call what: calls that change the cluster (shutdown, leave, down, directives, data
// remove) need an admin identity, a key made by shardctl keygen admin whose peer id the
// member lists in admin-allow; a refusal says why and is logged with the caller's peer id.
// Calls that only read (members, types, region-state, stats, locate, health, watch,
// handoffs, history, rebalance plan) and messages to entities (tell, ask, bench) are
// answered to admins and to the cluster's members, and, with admin-read-only-open (the
// default), to any peer that reaches the member at all, which means it holds the cluster
// key and passes the allow-list, and so could read the cluster's gossip anyway.
//
// stats, locate and handoffs fan out: the answering member asks the other members' admin
// servers, each within shard-region-query-timeout, and names the members that did not
// answer instead of passing a smaller number off as the whole (the code is PARTIAL then).
package adminserver
