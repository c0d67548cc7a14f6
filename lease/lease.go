package lease

import "context"

// Lease is one named lease for one owner (Akka's Lease).
type Lease interface {
	// Acquire tries to take the lease: true when this owner holds it now. lost is called
	// once, on another goroutine, if the lease is lost after it was acquired (it could not be
	// renewed in time, or another owner took it).
	Acquire(ctx context.Context, lost func(error)) (bool, error)
	// Release gives the lease up, so that another owner may take it at once.
	Release(ctx context.Context) error
	// CheckLease reports whether this owner holds the lease now.
	CheckLease() bool
}

// Provider makes leases.
type Provider interface {
	// Lease returns the lease called name for owner (one Lease per name and owner).
	Lease(name, owner string) Lease
}
