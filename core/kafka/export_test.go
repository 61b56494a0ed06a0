package kafka

// WithOffsetsForm makes the transport's transactions carry offsets in a
// given form, for tests and benchmarks that compare the forms on one
// cluster (pipeline.go): classic sends AddOffsetsToTxn and TxnOffsetCommit
// version 4 also where the implicit form is allowed; overlap sends the
// TxnOffsetCommit beside the records' produce instead of before it.
func WithOffsetsForm(classic, overlap bool) Option {
	return func(o *options) { o.offsets = offsetsForm{classic: classic, overlap: overlap} }
}
