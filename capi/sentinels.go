package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"context"

	"github.com/krabka/krabka-coord/core"
)

func init() {
	// The client-side half of the one error table (errors.go holds the data
	// categories): tested with errors.Is in this order, ErrFenced first.
	sentinelCodes = []sentinel{
		{core.ErrFenced, C.KRABKA_ERR_FENCED},
		{core.ErrLeaseExpired, C.KRABKA_ERR_LEASE_EXPIRED},
		{core.ErrNotLeader, C.KRABKA_ERR_NOT_LEADER},
		{core.ErrClosed, C.KRABKA_ERR_CLOSED},
		{core.ErrAuthorization, C.KRABKA_ERR_AUTHORIZATION},
		{core.ErrUnsupported, C.KRABKA_ERR_UNSUPPORTED},
		{core.ErrUnknownConfig, C.KRABKA_ERR_UNKNOWN_CONFIG},
		{core.ErrInvalidConfig, C.KRABKA_ERR_INVALID_CONFIG},
		{core.ErrTimeout, C.KRABKA_ERR_TIMEOUT},
		{context.DeadlineExceeded, C.KRABKA_ERR_TIMEOUT},
		{core.ErrTransport, C.KRABKA_ERR_TRANSPORT},
		{context.Canceled, C.KRABKA_ERR_CLOSED},
	}
}
