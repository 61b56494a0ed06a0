package main

/*
#include "kc_types.h"
*/
import "C"

import "context"

func init() {
	sentinelCodes = []sentinel{
		{context.DeadlineExceeded, C.KRABKA_ERR_TIMEOUT},
		{context.Canceled, C.KRABKA_ERR_CLOSED},
	}
}
