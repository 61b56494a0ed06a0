# make compat: the core integration scenarios against older Apache Kafka
# releases (3.9.1 and 3.0.2, the oldest with DescribeTransactions; 2.8.2 must
# answer UNSUPPORTED naming its version), each fetched from Maven Central like
# 4.1 and started as a one-node KRaft cluster. Table in build/compat/results.md
# (and docs/RELIABILITY.md). Not part of make test (three more broker starts).
#   make compat COMPAT_VERSIONS="3.9.1" COMPAT_TOO_OLD=
.PHONY: compat
compat:
	tests/compat/run.sh
