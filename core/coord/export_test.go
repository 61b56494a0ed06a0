package coord

// Sentinels returns the Go error values of the cluster side in the order
// ClientErrorKind tests them (for errtable_test.go).
func Sentinels() []*Error { return sentinels }
