package message

// MessageSysFlag bits, as RocketMQ stores them in the record's sysflag field.
const (
	FlagCompressed          int32 = 0x1
	FlagMultiTags           int32 = 0x1 << 1
	TransactionNotType      int32 = 0
	TransactionPreparedType int32 = 0x1 << 2
	TransactionCommitType   int32 = 0x2 << 2
	TransactionRollbackType int32 = 0x3 << 2
	FlagBornHostV6          int32 = 0x1 << 4
	FlagStoreHostV6         int32 = 0x1 << 5
	FlagNeedUnwrap          int32 = 0x1 << 6
	FlagInnerBatch          int32 = 0x1 << 7
	// TransactionTypeMask selects the transaction bits.
	TransactionTypeMask int32 = 0x3 << 2
)

// TransactionType returns the transaction bits of a sysflag (one of the
// Transaction*Type constants).
func TransactionType(sysFlag int32) int32 { return sysFlag & TransactionTypeMask }

// ResetTransactionType replaces the transaction bits of sysFlag with typ.
func ResetTransactionType(sysFlag, typ int32) int32 {
	return (sysFlag &^ TransactionTypeMask) | (typ & TransactionTypeMask)
}
