package remoting

import "strconv"

// Request codes (Java's RequestCode). Only the ones this project serves or sends.
const (
	SendMessage                      int16 = 10
	PullMessage                      int16 = 11
	QueryMessage                     int16 = 12
	QueryBrokerOffset                int16 = 13
	QueryConsumerOffset              int16 = 14
	UpdateConsumerOffset             int16 = 15
	UpdateAndCreateTopic             int16 = 17
	GetAllTopicConfig                int16 = 21
	GetTopicConfigList               int16 = 22
	GetTopicNameList                 int16 = 23
	UpdateBrokerConfig               int16 = 25
	GetBrokerConfig                  int16 = 26
	TriggerDeleteFiles               int16 = 27
	GetBrokerRuntimeInfo             int16 = 28
	SearchOffsetByTimestamp          int16 = 29
	GetMaxOffset                     int16 = 30
	GetMinOffset                     int16 = 31
	GetEarliestMsgStoreTime          int16 = 32
	ViewMessageByID                  int16 = 33
	HeartBeat                        int16 = 34
	UnregisterClient                 int16 = 35
	ConsumerSendMsgBack              int16 = 36
	EndTransaction                   int16 = 37
	GetConsumerListByGroup           int16 = 38
	CheckTransactionState            int16 = 39
	NotifyConsumerIDsChanged         int16 = 40
	LockBatchMQ                      int16 = 41
	UnlockBatchMQ                    int16 = 42
	GetAllConsumerOffset             int16 = 43
	GetAllDelayOffset                int16 = 45
	CheckClientConfig                int16 = 46
	PutKVConfig                      int16 = 100
	GetKVConfig                      int16 = 101
	DeleteKVConfig                   int16 = 102
	RegisterBroker                   int16 = 103
	UnregisterBroker                 int16 = 104
	GetRouteInfoByTopic              int16 = 105
	GetBrokerClusterInfo             int16 = 106
	UpdateAndCreateSubscriptionGroup int16 = 200
	GetAllSubscriptionGroupConfig    int16 = 201
	GetTopicStatsInfo                int16 = 202
	GetConsumerConnectionList        int16 = 203
	GetProducerConnectionList        int16 = 204
	WipeWritePermOfBroker            int16 = 205
	GetAllTopicListFromNameServer    int16 = 206
	DeleteSubscriptionGroup          int16 = 207
	GetConsumeStats                  int16 = 208
	DeleteTopicInBroker              int16 = 215
	DeleteTopicInNameServer          int16 = 216
	GetKVListByNamespace             int16 = 219
	ResetConsumerClientOffset        int16 = 220
	GetConsumerStatusFromClient      int16 = 221
	InvokeBrokerToResetOffset        int16 = 222
	InvokeBrokerToGetConsumerStatus  int16 = 223
	GetTopicsByCluster               int16 = 224
	QueryTopicConsumeByWho           int16 = 300
	GetSystemTopicListFromNameServer int16 = 304
	GetSystemTopicListFromBroker     int16 = 305
	CleanExpiredConsumeQueue         int16 = 306
	GetConsumerRunningInfo           int16 = 307
	ConsumeMessageDirectly           int16 = 309
	SendMessageV2                    int16 = 310
	GetUnitTopicList                 int16 = 311
	GetHasUnitSubTopicList           int16 = 312
	GetHasUnitSubUnUnitTopicList     int16 = 313
	CloneGroupOffset                 int16 = 314
	ViewBrokerStatsData              int16 = 315
	CleanUnusedTopic                 int16 = 316
	GetBrokerConsumeStats            int16 = 317
	UpdateNameServerConfig           int16 = 318
	GetNameServerConfig              int16 = 319
	SendBatchMessage                 int16 = 320
	QueryConsumeQueue                int16 = 321
	QueryDataVersion                 int16 = 322
	SendReplyMessage                 int16 = 324
	SendReplyMessageV2               int16 = 325
	PushReplyMessageToClient         int16 = 326
	AddWritePermOfBroker             int16 = 327
)

// Response codes (Java's ResponseCode).
const (
	Success                    int16 = 0
	SystemError                int16 = 1
	SystemBusy                 int16 = 2
	RequestCodeNotSupported    int16 = 3
	TransactionFailed          int16 = 4
	FlushDiskTimeout           int16 = 10
	SlaveNotAvailable          int16 = 11
	FlushSlaveTimeout          int16 = 12
	MessageIllegal             int16 = 13
	ServiceNotAvailable        int16 = 14
	VersionNotSupported        int16 = 15
	NoPermission               int16 = 16
	TopicNotExist              int16 = 17
	TopicExistAlready          int16 = 18
	PullNotFound               int16 = 19
	PullRetryImmediately       int16 = 20
	PullOffsetMoved            int16 = 21
	QueryNotFound              int16 = 22
	SubscriptionParseFailed    int16 = 23
	SubscriptionNotExist       int16 = 24
	SubscriptionNotLatest      int16 = 25
	SubscriptionGroupNotExist  int16 = 26
	FilterDataNotExist         int16 = 27
	FilterDataNotLatest        int16 = 28
	TransactionShouldCommit    int16 = 200
	TransactionShouldRollback  int16 = 201
	TransactionStateUnknown    int16 = 202
	TransactionStateGroupWrong int16 = 203
	NoBuyerID                  int16 = 204
	NotInCurrentUnit           int16 = 205
	ConsumerNotOnline          int16 = 206
	ConsumeMsgTimeout          int16 = 207
	NoMessage                  int16 = 208
)

// requestCodeNames and responseCodeNames are the constants' names in Java's RequestCode
// and ResponseCode, lower case: what RocketMQ 5's RemotingHelper.getRequestCodeDesc and
// getResponseCodeDesc put in the request_code and response_code labels.
var requestCodeNames = map[int16]string{
	SendMessage: "send_message", PullMessage: "pull_message", QueryMessage: "query_message",
	QueryBrokerOffset: "query_broker_offset", QueryConsumerOffset: "query_consumer_offset",
	UpdateConsumerOffset: "update_consumer_offset", UpdateAndCreateTopic: "update_and_create_topic",
	GetAllTopicConfig: "get_all_topic_config", GetTopicConfigList: "get_topic_config_list",
	GetTopicNameList: "get_topic_name_list", UpdateBrokerConfig: "update_broker_config",
	GetBrokerConfig: "get_broker_config", TriggerDeleteFiles: "trigger_delete_files",
	GetBrokerRuntimeInfo: "get_broker_runtime_info", SearchOffsetByTimestamp: "search_offset_by_timestamp",
	GetMaxOffset: "get_max_offset", GetMinOffset: "get_min_offset", GetEarliestMsgStoreTime: "get_earliest_msg_storetime",
	ViewMessageByID: "view_message_by_id", HeartBeat: "heart_beat", UnregisterClient: "unregister_client",
	ConsumerSendMsgBack: "consumer_send_msg_back", EndTransaction: "end_transaction",
	GetConsumerListByGroup: "get_consumer_list_by_group", CheckTransactionState: "check_transaction_state",
	NotifyConsumerIDsChanged: "notify_consumer_ids_changed", LockBatchMQ: "lock_batch_mq",
	UnlockBatchMQ: "unlock_batch_mq", GetAllConsumerOffset: "get_all_consumer_offset",
	GetAllDelayOffset: "get_all_delay_offset", CheckClientConfig: "check_client_config",
	PutKVConfig: "put_kv_config", GetKVConfig: "get_kv_config", DeleteKVConfig: "delete_kv_config",
	RegisterBroker: "register_broker", UnregisterBroker: "unregister_broker",
	GetRouteInfoByTopic: "get_routeinfo_by_topic", GetBrokerClusterInfo: "get_broker_cluster_info",
	UpdateAndCreateSubscriptionGroup: "update_and_create_subscriptiongroup",
	GetAllSubscriptionGroupConfig:    "get_all_subscriptiongroup_config", GetTopicStatsInfo: "get_topic_stats_info",
	GetConsumerConnectionList: "get_consumer_connection_list", GetProducerConnectionList: "get_producer_connection_list",
	WipeWritePermOfBroker: "wipe_write_perm_of_broker", GetAllTopicListFromNameServer: "get_all_topic_list_from_nameserver",
	DeleteSubscriptionGroup: "delete_subscriptiongroup", GetConsumeStats: "get_consume_stats",
	DeleteTopicInBroker: "delete_topic_in_broker", DeleteTopicInNameServer: "delete_topic_in_namesrv",
	GetKVListByNamespace: "get_kvlist_by_namespace", ResetConsumerClientOffset: "reset_consumer_client_offset",
	GetConsumerStatusFromClient: "get_consumer_status_from_client", InvokeBrokerToResetOffset: "invoke_broker_to_reset_offset",
	InvokeBrokerToGetConsumerStatus: "invoke_broker_to_get_consumer_status", GetTopicsByCluster: "get_topics_by_cluster",
	QueryTopicConsumeByWho: "query_topic_consume_by_who", GetSystemTopicListFromNameServer: "get_system_topic_list_from_ns",
	GetSystemTopicListFromBroker: "get_system_topic_list_from_broker", CleanExpiredConsumeQueue: "clean_expired_consumequeue",
	GetConsumerRunningInfo: "get_consumer_running_info", ConsumeMessageDirectly: "consume_message_directly",
	SendMessageV2: "send_message_v2", GetUnitTopicList: "get_unit_topic_list", GetHasUnitSubTopicList: "get_has_unit_sub_topic_list",
	GetHasUnitSubUnUnitTopicList: "get_has_unit_sub_ununit_topic_list", CloneGroupOffset: "clone_group_offset",
	ViewBrokerStatsData: "view_broker_stats_data", CleanUnusedTopic: "clean_unused_topic",
	GetBrokerConsumeStats: "get_broker_consume_stats", UpdateNameServerConfig: "update_namesrv_config",
	GetNameServerConfig: "get_namesrv_config", SendBatchMessage: "send_batch_message", QueryConsumeQueue: "query_consume_queue",
	QueryDataVersion: "query_data_version", SendReplyMessage: "send_reply_message", SendReplyMessageV2: "send_reply_message_v2",
	PushReplyMessageToClient: "push_reply_message_to_client", AddWritePermOfBroker: "add_write_perm_of_broker",
}

var responseCodeNames = map[int16]string{
	Success: "success", SystemError: "system_error", SystemBusy: "system_busy",
	RequestCodeNotSupported: "request_code_not_supported", TransactionFailed: "transaction_failed",
	FlushDiskTimeout: "flush_disk_timeout", SlaveNotAvailable: "slave_not_available", FlushSlaveTimeout: "flush_slave_timeout",
	MessageIllegal: "message_illegal", ServiceNotAvailable: "service_not_available", VersionNotSupported: "version_not_supported",
	NoPermission: "no_permission", TopicNotExist: "topic_not_exist", TopicExistAlready: "topic_exist_already",
	PullNotFound: "pull_not_found", PullRetryImmediately: "pull_retry_immediately", PullOffsetMoved: "pull_offset_moved",
	QueryNotFound: "query_not_found", SubscriptionParseFailed: "subscription_parse_failed",
	SubscriptionNotExist: "subscription_not_exist", SubscriptionNotLatest: "subscription_not_latest",
	SubscriptionGroupNotExist: "subscription_group_not_exist", FilterDataNotExist: "filter_data_not_exist",
	FilterDataNotLatest: "filter_data_not_latest", TransactionShouldCommit: "transaction_should_commit",
	TransactionShouldRollback: "transaction_should_rollback", TransactionStateUnknown: "transaction_state_unknown",
	TransactionStateGroupWrong: "transaction_state_group_wrong", NoBuyerID: "no_buyer_id",
	NotInCurrentUnit: "not_in_current_unit", ConsumerNotOnline: "consumer_not_online",
	ConsumeMsgTimeout: "consume_msg_timeout", NoMessage: "no_message",
}

// RequestCodeName is the code's name in Java's RequestCode in lower case
// ("send_message_v2"), or the number for a code this project does not know.
func RequestCodeName(code int16) string {
	if n, ok := requestCodeNames[code]; ok {
		return n
	}
	return strconv.Itoa(int(code))
}

// ResponseCodeName is the code's name in Java's ResponseCode in lower case
// ("system_busy"), or the number for a code this project does not know.
func ResponseCodeName(code int16) string {
	if n, ok := responseCodeNames[code]; ok {
		return n
	}
	return strconv.Itoa(int(code))
}
