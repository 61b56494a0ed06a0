package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"context"

	"github.com/krabka/krabka-coord/core/coord"
)

func init() {
	// The client-side half of the one error table (errors.go holds the data
	// categories): tested with errors.Is in this order, ErrFenced first.
	sentinelCodes = []sentinel{
		{coord.ErrFenced, C.KRABKA_ERR_FENCED},
		{coord.ErrLeaseExpired, C.KRABKA_ERR_LEASE_EXPIRED},
		{coord.ErrNotLeader, C.KRABKA_ERR_NOT_LEADER},
		{coord.ErrClosed, C.KRABKA_ERR_CLOSED},
		{coord.ErrAuthorization, C.KRABKA_ERR_AUTHORIZATION},
		{coord.ErrUnsupported, C.KRABKA_ERR_UNSUPPORTED},
		{coord.ErrUnknownConfig, C.KRABKA_ERR_UNKNOWN_CONFIG},
		{coord.ErrInvalidConfig, C.KRABKA_ERR_INVALID_CONFIG},
		{coord.ErrInvalidArgument, C.KRABKA_ERR_INVALID_ARG},
		{coord.ErrTimeout, C.KRABKA_ERR_TIMEOUT},
		{context.DeadlineExceeded, C.KRABKA_ERR_TIMEOUT},
		{coord.ErrTransport, C.KRABKA_ERR_TRANSPORT},
		{context.Canceled, C.KRABKA_ERR_CLOSED},
	}
}
