//! The requests a stdio client is waiting on, so that a read can tell whether it is alone.
//!
//! A read that cannot wait ([`agent_read::Session::read_json_without_waiting`]) answers sooner on the protocol thread
//! than through the blocking pool, whose hand-off costs two thread wake-ups. That holds while the read is alone.
//! When a client sends many at once, the pool is faster: its threads read in parallel while the one protocol thread
//! parses requests and writes answers. So over stdio, whose runtime has that single thread, a read runs inline only
//! when it is the one request the client is waiting on. (Over HTTP a worker per core parses and reads, and reads that
//! cannot wait always run inline.)
//!
//! [`Counted`] wraps the transport and keeps the set of request ids received and not yet settled: answered, or
//! cancelled by the client (rmcp then drops the answer instead of sending it).

use rmcp::RoleServer;
use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

/// The ids of the requests a connection has received and not yet answered (nor seen cancelled).
#[derive(Debug, Clone, Default)]
pub(super) struct Pending(Arc<Mutex<HashSet<RequestId>>>);

impl Pending {
    /// How many requests are waiting on an answer, the caller's own included.
    pub fn count(&self) -> usize {
        self.ids().len()
    }

    /// Records `ids` as waiting, as if they had been received.
    #[cfg(test)]
    pub fn insert_for_test(&self, ids: impl IntoIterator<Item = RequestId>) {
        self.ids().extend(ids);
    }

    fn ids(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        // Each update is one insert or remove: a panic elsewhere cannot leave the set half-changed.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A transport that records in a [`Pending`] what passes through it, and otherwise changes nothing.
pub(super) struct Counted<T> {
    inner: T,
    pending: Pending,
}

impl<T> Counted<T> {
    /// Wraps `inner`, recording into `pending`.
    pub fn new(inner: T, pending: Pending) -> Self {
        Counted { inner, pending }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Counted<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(response) => Some(&response.id),
            JsonRpcMessage::Error(error) => error.id.as_ref(),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
        };
        if let Some(id) = answered {
            self.pending.ids().remove(id);
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let message = self.inner.receive().await;
        match &message {
            Some(JsonRpcMessage::Request(request)) => _ = self.pending.ids().insert(request.id.clone()),
            Some(JsonRpcMessage::Notification(notification)) => {
                if let ClientNotification::CancelledNotification(cancelled) = &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.pending.ids().remove(id);
                }
            }
            _ => {}
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ErrorData, ServerResult};
    use rmcp::transport::async_rw::AsyncRwTransport;
    use tokio::io::AsyncWriteExt;

    fn line(message: serde_json::Value) -> Vec<u8> {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        line
    }

    fn call(id: i64) -> Vec<u8> {
        let params = serde_json::json!({"name": "read", "arguments": {"path": "a.txt"}});
        line(serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))
    }

    #[tokio::test]
    async fn counts_requests_until_answered_or_cancelled() {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(server);
        let pending = Pending::default();
        let mut transport = Counted::new(AsyncRwTransport::new_server(read, write), pending.clone());
        for id in [1, 2, 3] {
            client.write_all(&call(id)).await.unwrap();
        }
        for _ in 0..3 {
            transport.receive().await.unwrap();
        }
        assert_eq!(pending.count(), 3);
        transport.send(JsonRpcMessage::response(ServerResult::empty(()), RequestId::Number(1))).await.unwrap();
        transport
            .send(JsonRpcMessage::error(ErrorData::internal_error("x", None), Some(RequestId::Number(2))))
            .await
            .unwrap();
        assert_eq!(pending.count(), 1);
        let cancel = serde_json::json!({"requestId": 3, "reason": "no longer needed"});
        client
            .write_all(&line(
                serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}),
            ))
            .await
            .unwrap();
        transport.receive().await.unwrap();
        assert_eq!(pending.count(), 0);
        // An answer to nothing pending (an error for a line that did not parse) changes nothing.
        transport.send(JsonRpcMessage::error(ErrorData::parse_error("bad", None), None)).await.unwrap();
        client.write_all(&call(4)).await.unwrap();
        transport.receive().await.unwrap();
        assert_eq!(pending.count(), 1);
    }
}
