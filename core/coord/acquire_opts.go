package coord

import (
	"github.com/krabka/krabka-coord/core"
)

// AcquireOption adjusts one Acquire or TryAcquire call.
type AcquireOption func(*acquireOptions)

type acquireOptions struct {
	meta       []byte // the term's metadata (krabka.meta on every lease record of the term)
	memberMeta []byte // the member's metadata (krabka.meta on its registration)
	rideOutage bool   // the elector's ElectRideOutage: a standby back from an outage gives the holder a lease (outage.go)
}

// WithMetadata attaches metadata to the term this acquire wins (docs/PROTOCOL.md
// 11.1): opaque bytes, at most core.MaxMetadataBytes, for example the address
// clients should use. Every lease record of the term carries it; a holder
// changes it with Leadership.SetMetadata. Describe, Watch and the roster
// report it. nil: none.
func WithMetadata(b []byte) AcquireOption {
	return func(o *acquireOptions) { o.meta = append([]byte(nil), b...) }
}

// WithMemberMetadata attaches metadata to the member's registration
// (docs/PROTOCOL.md 11.2): what a candidate advertises before it leads. It is
// written when the call registers the member (a member already registered
// keeps the registration it has).
func WithMemberMetadata(b []byte) AcquireOption {
	return func(o *acquireOptions) { o.memberMeta = append([]byte(nil), b...) }
}

// CheckAcquireOptions reports the error an Acquire with opts would give
// before writing anything (metadata over core.MaxMetadataBytes is
// ErrInvalidArgument), so that a caller storing options for later (the C
// API's krabka_client_set_metadata) refuses them at once.
func CheckAcquireOptions(opts ...AcquireOption) error {
	_, err := acquireOpts(opts)
	return err
}

func acquireOpts(opts []AcquireOption) (acquireOptions, error) {
	var o acquireOptions
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	if err := checkMetadata("metadata", o.meta); err != nil {
		return o, err
	}
	if err := checkMetadata("member metadata", o.memberMeta); err != nil {
		return o, err
	}
	return o, nil
}

func checkMetadata(what string, b []byte) error {
	if len(b) > core.MaxMetadataBytes {
		return WrapError(ErrInvalidArgument, nil, "%s of %d bytes: at most %d allowed (krabka.meta)", what, len(b), core.MaxMetadataBytes)
	}
	return nil
}

// registrationHeaders are the headers of this implementation's registration
// records: krabka.rejoin always (this client registers again by itself when
// it sees its registration tombstoned, section 11.6), krabka.meta with
// member metadata.
func (o acquireOptions) registrationHeaders() []Header {
	hs := []Header{{Key: core.HeaderRejoin, Value: []byte("1")}}
	if o.memberMeta != nil {
		hs = append(hs, Header{Key: core.HeaderMeta, Value: o.memberMeta})
	}
	return hs
}
