//! A client's message that names a key twice in one object, on either transport.
//!
//! rmcp parses each message into maps that keep the last of two equal keys, so by the time the handler sees a call,
//! `{"path": ".env", "path": "a.txt"}` has become a read of `a.txt`, whatever a harness approved by the first key.
//! Both transports still hold the message's bytes (stdio its line, HTTP the body it reads whole) and check them
//! before rmcp's parse counts ([`screen`]):
//!
//! - within the `arguments` of a `tools/call`: the call goes on, marked ([`DuplicateArgument`]), and the handler
//!   answers it as it answers any other bad argument: a tool error, `INVALID_PARAM` naming the key, which the model
//!   sees;
//! - anywhere else (`id`, `method`, `params`, `name`, `arguments` itself, another method's params): the message is
//!   not valid JSON-RPC. A request is answered `-32600` naming the key, with its `id` unless `id` is the key repeated;
//!   over stdio a notification is dropped (JSON-RPC forbids answering it) and a response becomes an error for the
//!   request it answers, and over HTTP either is refused `400` with that error.

use super::malformed::readable_id;
use agent_read::{DuplicateKey, duplicate_keys};
use rmcp::model::{ErrorCode, ErrorData, RequestId};
use serde_json::Value;

/// Where a tool's arguments sit in a JSON-RPC message.
const ARGUMENTS: [&str; 2] = ["params", "arguments"];

/// Marks a `tools/call` whose arguments name a key twice; put in the request's extensions by the transport (over
/// HTTP, in those of the HTTP request, which rmcp hands on), taken out by the handler.
#[derive(Debug, Clone)]
pub(super) struct DuplicateArgument(pub DuplicateKey);

/// What a message's keys call for.
#[derive(Debug)]
pub(super) enum Screened {
    /// Every object names each key once.
    Clean,
    /// Only a `tools/call`'s arguments name a key twice: the call goes on, marked with this.
    Arguments(DuplicateArgument),
    /// The message itself names a key twice: it is refused.
    Refused(Refusal),
}

/// A message refused for a key it names twice.
#[derive(Debug)]
pub(super) struct Refusal {
    /// What the message was.
    pub kind: Kind,
    /// Its `id`, when it has one that can be trusted (not itself repeated).
    pub id: Option<RequestId>,
    /// The error that says which key, and where.
    pub error: ErrorData,
}

/// What kind of message was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Request,
    Notification,
    Response,
}

/// Checks a message's bytes (a line without its line feed, or a body, a byte-order mark removed) for keys named twice.
pub(super) fn screen(message: &[u8]) -> Screened {
    let found = duplicate_keys(message, &ARGUMENTS);
    if found.is_empty() {
        return Screened::Clean;
    }
    // Rare: the message is parsed once more, as rmcp did (the last key wins), to learn what it is.
    let value: Value = serde_json::from_slice(message).unwrap_or_default();
    let kind = match (value.get("method"), value.get("id")) {
        (Some(_), Some(_)) => Kind::Request,
        (Some(_), None) => Kind::Notification,
        (None, _) => Kind::Response,
    };
    let is_call = kind == Kind::Request && value.get("method").and_then(Value::as_str) == Some("tools/call");
    let (duplicate, place) = match (found.elsewhere, found.inside) {
        (None, Some(inside)) if is_call => return Screened::Arguments(DuplicateArgument(inside)),
        (Some(elsewhere), _) => {
            let place = elsewhere.place("the message");
            (elsewhere, place)
        }
        (None, Some(inside)) => {
            let place = match inside.within.as_str() {
                "" => "`params.arguments`".to_string(),
                within if within.starts_with('[') => format!("`params.arguments{within}`"),
                within => format!("`params.arguments.{within}`"),
            };
            (inside, place)
        }
        (None, None) => return Screened::Clean,
    };
    let id_repeated = duplicate.key == "id" && duplicate.within.is_empty();
    let message = format!(
        "invalid request: the key `{}` appears more than once in {place}; JSON readers disagree on which one counts: \
         send each key once",
        duplicate.shown_key()
    );
    Screened::Refused(Refusal {
        kind,
        id: if id_repeated { None } else { readable_id(&value) },
        error: ErrorData::new(ErrorCode::INVALID_REQUEST, message, None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(message: &str) -> Refusal {
        match screen(message.as_bytes()) {
            Screened::Refused(refusal) => refusal,
            other => panic!("{message}: {other:?}"),
        }
    }

    #[test]
    fn a_call_whose_arguments_repeat_a_key_goes_on_marked() {
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"path":".env","path":"a.txt"}}}"#;
        let Screened::Arguments(DuplicateArgument(key)) = screen(call.as_bytes()) else { panic!("not marked") };
        assert_eq!((key.key.as_str(), key.within.as_str()), ("path", ""));
        let nested = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_many","arguments":{"paths":["a"],"x":{"k":1,"k":2}}}}"#;
        let Screened::Arguments(DuplicateArgument(key)) = screen(nested.as_bytes()) else { panic!("not marked") };
        assert_eq!((key.key.as_str(), key.within.as_str()), ("k", "x"));
        let clean =
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"path":"a"}}}"#;
        assert!(matches!(screen(clean.as_bytes()), Screened::Clean));
    }

    #[test]
    fn a_message_that_repeats_a_key_of_its_own_is_refused_naming_it() {
        let name = refused(
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","name":"read_many","arguments":{}}}"#,
        );
        assert_eq!((name.kind, name.id.clone()), (Kind::Request, Some(RequestId::Number(2))));
        assert_eq!(name.error.code, ErrorCode::INVALID_REQUEST);
        assert!(name.error.message.contains("the key `name` appears more than once in `params`"), "{name:?}");
        let arguments = refused(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read","arguments":{"path":"a"},"arguments":{"path":"b"}}}"#,
        );
        assert!(arguments.error.message.contains("`arguments` appears more than once in `params`"), "{arguments:?}");
        let id = refused(r#"{"jsonrpc":"2.0","id":4,"id":5,"method":"ping"}"#);
        assert_eq!(id.id, None, "an id given twice is no id to answer with");
        let method = refused(r#"{"jsonrpc":"2.0","id":6,"method":"tools/list","method":"tools/call"}"#);
        assert!(method.error.message.contains("`method` appears more than once in the message"), "{method:?}");
        // Another method's arguments are not a tool's: the message is refused.
        let prompt = refused(
            r#"{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"p","arguments":{"a":"1","a":"2"}}}"#,
        );
        assert!(prompt.error.message.contains("in `params.arguments`"), "{prompt:?}");
        let note =
            refused(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"requestId":2}}"#);
        assert_eq!(note.kind, Kind::Notification);
        let answer = refused(r#"{"jsonrpc":"2.0","id":8,"result":{"roots":[{"uri":"file:///a","uri":"file:///"}]}}"#);
        assert_eq!((answer.kind, answer.id), (Kind::Response, Some(RequestId::Number(8))));
    }
}
