//! The metric names and descriptions of Java's consumer, by group.

use crate::metric::{CONSUMER_GROUP, COORDINATOR_GROUP, FETCH_MANAGER_GROUP, NODE_GROUP};

use super::sensor::MetricSpec;

macro_rules! specs {
    ($group:expr => $($id:ident = $name:literal, $description:literal;)*) => {
        $(
            pub(crate) static $id: MetricSpec = MetricSpec {
                group: $group,
                name: $name,
                description: $description,
            };
        )*
    };
}

specs! { FETCH_MANAGER_GROUP =>
    FETCH_SIZE_AVG = "fetch-size-avg", "The average number of bytes fetched per request";
    FETCH_SIZE_MAX = "fetch-size-max", "The maximum number of bytes fetched per request";
    RECORDS_PER_REQUEST_AVG = "records-per-request-avg", "The average number of records in each request";
    BYTES_CONSUMED_RATE = "bytes-consumed-rate", "The average number of bytes consumed per second";
    BYTES_CONSUMED_TOTAL = "bytes-consumed-total", "The total number of bytes consumed";
    RECORDS_CONSUMED_RATE = "records-consumed-rate", "The average number of records consumed per second";
    RECORDS_CONSUMED_TOTAL = "records-consumed-total", "The total number of records consumed";
    FETCH_LATENCY_AVG = "fetch-latency-avg", "The average time taken for a fetch request.";
    FETCH_LATENCY_MAX = "fetch-latency-max", "The max time taken for any fetch request.";
    FETCH_RATE = "fetch-rate", "The number of fetch requests per second.";
    FETCH_TOTAL = "fetch-total", "The total number of fetch requests.";
    RECORDS_LAG_MAX = "records-lag-max", "The maximum lag in terms of number of records for any partition in this window. NOTE: This is based on current offset and not committed offset";
    RECORDS_LEAD_MIN = "records-lead-min", "The minimum lead in terms of number of records for any partition in this window";
    FETCH_THROTTLE_TIME_AVG = "fetch-throttle-time-avg", "The average throttle time in ms";
    FETCH_THROTTLE_TIME_MAX = "fetch-throttle-time-max", "The maximum throttle time in ms";
    PARTITION_RECORDS_LAG = "records-lag", "The latest lag of the partition";
    PARTITION_RECORDS_LAG_AVG = "records-lag-avg", "The average lag of the partition";
    PARTITION_RECORDS_LAG_MAX = "records-lag-max", "The max lag of the partition";
    PARTITION_RECORDS_LEAD = "records-lead", "The latest lead of the partition";
    PARTITION_RECORDS_LEAD_AVG = "records-lead-avg", "The average lead of the partition";
    PARTITION_RECORDS_LEAD_MIN = "records-lead-min", "The min lead of the partition";
    PREFERRED_READ_REPLICA = "preferred-read-replica", "The current read replica for the partition, or -1 if reading from leader";
}

specs! { COORDINATOR_GROUP =>
    COMMIT_LATENCY_AVG = "commit-latency-avg", "The average time taken for a commit request";
    COMMIT_LATENCY_MAX = "commit-latency-max", "The max time taken for a commit request";
    COMMIT_RATE = "commit-rate", "The number of commit calls per second";
    COMMIT_TOTAL = "commit-total", "The total number of commit calls";
    HEARTBEAT_RESPONSE_TIME_MAX = "heartbeat-response-time-max", "The max time taken to receive a response to a heartbeat request";
    HEARTBEAT_RATE = "heartbeat-rate", "The number of heartbeats per second";
    HEARTBEAT_TOTAL = "heartbeat-total", "The total number of heartbeats";
    LAST_HEARTBEAT_SECONDS_AGO = "last-heartbeat-seconds-ago", "The number of seconds since the last coordinator heartbeat was sent";
    JOIN_TIME_AVG = "join-time-avg", "The average time taken for a group rejoin";
    JOIN_TIME_MAX = "join-time-max", "The max time taken for a group rejoin";
    JOIN_RATE = "join-rate", "The number of group joins per second";
    JOIN_TOTAL = "join-total", "The total number of group joins";
    SYNC_TIME_AVG = "sync-time-avg", "The average time taken for a group sync";
    SYNC_TIME_MAX = "sync-time-max", "The max time taken for a group sync";
    SYNC_RATE = "sync-rate", "The number of group syncs per second";
    SYNC_TOTAL = "sync-total", "The total number of group syncs";
    REBALANCE_LATENCY_AVG = "rebalance-latency-avg", "The average time in ms taken for a group to complete a rebalance";
    REBALANCE_LATENCY_MAX = "rebalance-latency-max", "The max time in ms taken for a group to complete a rebalance";
    REBALANCE_LATENCY_TOTAL = "rebalance-latency-total", "The total number of milliseconds spent in rebalances";
    REBALANCE_TOTAL = "rebalance-total", "The total number of rebalance events";
    REBALANCE_RATE_PER_HOUR = "rebalance-rate-per-hour", "The number of rebalance events per hour";
    FAILED_REBALANCE_TOTAL = "failed-rebalance-total", "The total number of failed rebalance events";
    FAILED_REBALANCE_RATE_PER_HOUR = "failed-rebalance-rate-per-hour", "The number of failed rebalance events per hour";
    LAST_REBALANCE_SECONDS_AGO = "last-rebalance-seconds-ago", "The number of seconds since the last rebalance event";
    ASSIGNED_PARTITIONS = "assigned-partitions", "The number of partitions currently assigned to this consumer";
    PARTITION_REVOKED_LATENCY_AVG = "partition-revoked-latency-avg", "The average time taken for a partition-revoked rebalance listener callback";
    PARTITION_REVOKED_LATENCY_MAX = "partition-revoked-latency-max", "The max time taken for a partition-revoked rebalance listener callback";
    PARTITION_ASSIGNED_LATENCY_AVG = "partition-assigned-latency-avg", "The average time taken for a partition-assigned rebalance listener callback";
    PARTITION_ASSIGNED_LATENCY_MAX = "partition-assigned-latency-max", "The max time taken for a partition-assigned rebalance listener callback";
    PARTITION_LOST_LATENCY_AVG = "partition-lost-latency-avg", "The average time taken for a partition-lost rebalance listener callback";
    PARTITION_LOST_LATENCY_MAX = "partition-lost-latency-max", "The max time taken for a partition-lost rebalance listener callback";
}

specs! { CONSUMER_GROUP =>
    LAST_POLL_SECONDS_AGO = "last-poll-seconds-ago", "The number of seconds since the last poll() invocation.";
    TIME_BETWEEN_POLL_AVG = "time-between-poll-avg", "The average delay between invocations of poll() in milliseconds.";
    TIME_BETWEEN_POLL_MAX = "time-between-poll-max", "The max delay between invocations of poll() in milliseconds.";
    POLL_IDLE_RATIO_AVG = "poll-idle-ratio-avg", "The average fraction of time the consumer's poll() is idle as opposed to waiting for the user code to process records.";
    COMMIT_SYNC_TIME_NS_TOTAL = "commit-sync-time-ns-total", "The total time the consumer has spent in commitSync in nanoseconds";
    COMMITTED_TIME_NS_TOTAL = "committed-time-ns-total", "The total time the consumer has spent in committed in nanoseconds";
}

// Java's `Selector` metrics (`SelectorMetrics`), over every connection.
specs! { CONSUMER_GROUP =>
    CONNECTION_CLOSE_RATE = "connection-close-rate", "The number of connections closed per second";
    CONNECTION_CLOSE_TOTAL = "connection-close-total", "The total number of connections closed";
    CONNECTION_CREATION_RATE = "connection-creation-rate", "The number of new connections established per second";
    CONNECTION_CREATION_TOTAL = "connection-creation-total", "The total number of new connections established";
    CONNECTION_COUNT = "connection-count", "The current number of active connections.";
    NETWORK_IO_RATE = "network-io-rate", "The number of network operations (reads or writes) on all connections per second";
    NETWORK_IO_TOTAL = "network-io-total", "The total number of network operations (reads or writes) on all connections";
    OUTGOING_BYTE_RATE = "outgoing-byte-rate", "The number of outgoing bytes sent to all servers per second";
    OUTGOING_BYTE_TOTAL = "outgoing-byte-total", "The total number of outgoing bytes sent to all servers";
    REQUEST_RATE = "request-rate", "The number of requests sent per second";
    REQUEST_TOTAL = "request-total", "The total number of requests sent";
    REQUEST_SIZE_AVG = "request-size-avg", "The average size of requests sent.";
    REQUEST_SIZE_MAX = "request-size-max", "The maximum size of any request sent.";
    INCOMING_BYTE_RATE = "incoming-byte-rate", "The number of bytes read off all sockets per second";
    INCOMING_BYTE_TOTAL = "incoming-byte-total", "The total number of bytes read off all sockets";
    RESPONSE_RATE = "response-rate", "The number of responses received per second";
    RESPONSE_TOTAL = "response-total", "The total number of responses received";
}

// Java's per-connection `Selector` metrics (`maybeRegisterConnectionMetrics`), tagged `node-id`.
specs! { NODE_GROUP =>
    NODE_REQUEST_RATE = "request-rate", "The number of requests sent per second";
    NODE_REQUEST_TOTAL = "request-total", "The total number of requests sent";
    NODE_REQUEST_SIZE_AVG = "request-size-avg", "The average size of requests sent.";
    NODE_REQUEST_SIZE_MAX = "request-size-max", "The maximum size of any request sent.";
    NODE_OUTGOING_BYTE_RATE = "outgoing-byte-rate", "The number of outgoing bytes per second";
    NODE_OUTGOING_BYTE_TOTAL = "outgoing-byte-total", "The total number of outgoing bytes";
    NODE_RESPONSE_RATE = "response-rate", "The number of responses received per second";
    NODE_RESPONSE_TOTAL = "response-total", "The total number of responses received";
    NODE_INCOMING_BYTE_RATE = "incoming-byte-rate", "The number of incoming bytes per second";
    NODE_INCOMING_BYTE_TOTAL = "incoming-byte-total", "The total number of incoming bytes";
    NODE_REQUEST_LATENCY_AVG = "request-latency-avg", "The average request latency in ms for a node.";
    NODE_REQUEST_LATENCY_MAX = "request-latency-max", "The maximum request latency in ms for a node.";
}

// Java's new consumer's event-queue metrics (KIP-1068, `AsyncConsumerMetrics`).
specs! { CONSUMER_GROUP =>
    TIME_BETWEEN_NETWORK_THREAD_POLL_AVG = "time-between-network-thread-poll-avg", "The average time taken, in milliseconds, between each poll in the network thread.";
    TIME_BETWEEN_NETWORK_THREAD_POLL_MAX = "time-between-network-thread-poll-max", "The maximum time taken, in milliseconds, between each poll in the network thread.";
    APPLICATION_EVENT_QUEUE_SIZE = "application-event-queue-size", "The current number of events in the queue to send from the application thread to the background thread.";
    APPLICATION_EVENT_QUEUE_TIME_AVG = "application-event-queue-time-avg", "The average time, in milliseconds, that application events are taking to be dequeued.";
    APPLICATION_EVENT_QUEUE_TIME_MAX = "application-event-queue-time-max", "The maximum time, in milliseconds, that an application event took to be dequeued.";
    APPLICATION_EVENT_QUEUE_PROCESSING_TIME_AVG = "application-event-queue-processing-time-avg", "The average time, in milliseconds, that the background thread takes to process all available application events.";
    APPLICATION_EVENT_QUEUE_PROCESSING_TIME_MAX = "application-event-queue-processing-time-max", "The maximum time, in milliseconds, that the background thread took to process all available application events.";
    BACKGROUND_EVENT_QUEUE_SIZE = "background-event-queue-size", "The current number of events in the queue to send from the background thread to the application thread.";
    BACKGROUND_EVENT_QUEUE_TIME_AVG = "background-event-queue-time-avg", "The average time, in milliseconds, that background events are taking to be dequeued.";
    BACKGROUND_EVENT_QUEUE_TIME_MAX = "background-event-queue-time-max", "The maximum time, in milliseconds, that background events are taking to be dequeued.";
    BACKGROUND_EVENT_QUEUE_PROCESSING_TIME_AVG = "background-event-queue-processing-time-avg", "The average time, in milliseconds, that the consumer took to process all available background events.";
    BACKGROUND_EVENT_QUEUE_PROCESSING_TIME_MAX = "background-event-queue-processing-time-max", "The maximum time, in milliseconds, that the consumer took to process all available background events.";
}
