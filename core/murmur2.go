package core

import (
	"encoding/binary"
	"fmt"
)

// Murmur2 is Kafka's murmur2 hash (seed 0x9747b28c), as used by the Java
// client's default partitioner, returned as a signed 32-bit integer.
func Murmur2(b []byte) int32 {
	const (
		seed = 0x9747b28c
		m    = 0x5bd1e995
		r    = 24
	)
	n := len(b)
	h := uint32(seed) ^ uint32(n)
	i := 0
	for ; i+4 <= n; i += 4 {
		k := binary.LittleEndian.Uint32(b[i:])
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch n - i {
	case 3:
		h ^= uint32(b[i+2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[i+1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[i])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// RolePartition returns the partition of role r among partitions:
// (murmur2(utf8(role)) & 0x7fffffff) % partitions. A count below 1 is
// invalid_partition_count.
func RolePartition(r Role, partitions int32) (int32, error) {
	if partitions < 1 {
		return 0, newErr(PartPartition, CatInvalidPartitionCount, "partitions", fmt.Sprintf("%d is below 1", partitions))
	}
	h := Murmur2([]byte(r.s)) & 0x7fffffff
	return h % partitions, nil
}
