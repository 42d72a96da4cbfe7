//! What an object store's answer means: the document a request's success carries, S3's errors
//! read whole (an `<Error>` may follow a `200 OK` and minutes of whitespace), and which failures
//! are worth sending again (docs/OBJECTS.md §3). Used by the signed requests of
//! zseal's own (own.rs).

use std::io;

use bytes::Bytes;
use http::StatusCode;

/// What the store answered.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: Bytes,
}

/// Which request an answer is to: the document its success carries, and which of its 409
/// Conflict answers are worth sending again ([`conflict_is_transient`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// S3's and GCS's CompleteMultipartUpload.
    Complete,
    /// S3's UploadPartCopy.
    CopyPart,
    /// Azure's Put Block List.
    CommitBlocks,
    /// A read of what a completion left (a HEAD of the object, Azure's Get Block List),
    /// whose success is the document named, if any.
    Check(Option<&'static str>),
}

impl Request {
    /// The root element of the document a success carries; `None` when the body does not
    /// matter (Azure's 201, a HEAD).
    fn expect(self) -> Option<&'static str> {
        match self {
            Request::Complete => Some("CompleteMultipartUploadResult"),
            Request::CopyPart => Some("CopyPartResult"),
            Request::CommitBlocks => None,
            Request::Check(expect) => expect,
        }
    }
}

/// What an answer means.
pub(crate) enum Verdict {
    Done,
    Failed { transient: bool, error: io::Error },
}

/// Judges an answer to `request`: a failing status, an `<Error>` document (whatever the
/// status), or a success without the document the request expects all fail; what S3 documents
/// as worth retrying (5xx, 429, InternalError, SlowDown, a 200 whose body is not the result)
/// is transient, and of the 409s those [`conflict_is_transient`] names.
pub(crate) fn judge(a: &Answer, request: Request) -> Verdict {
    let root = root_element(&a.body);
    let is_error = matches!(&root, Ok(Some(r)) if r == "Error");
    if a.status.is_success() && !is_error {
        let Some(expect) = request.expect() else {
            return Verdict::Done; // an answer whose body does not matter (Azure's 201, a HEAD)
        };
        // moto 5.2 names the completion's document `CompleteMultipartUploadResponse`, with
        // the result's fields: the same answer under another name.
        let same = |r: &str| {
            r == expect || (request == Request::Complete && r == "CompleteMultipartUploadResponse")
        };
        return match root {
            Ok(Some(r)) if same(&r) => Verdict::Done,
            // An empty body is a cut answer (S3 may send 200 and then fail): worth a retry.
            // Another whole document is what a retry would get again: named at once.
            Ok(found) => Verdict::Failed {
                transient: found.is_none(),
                error: io::Error::other(format!(
                    "the store answered {} without a {expect} document ({})",
                    a.status,
                    found.map_or("an empty body".into(), |r| format!(
                        "its root element is <{r}>"
                    ))
                )),
            },
            Err(e) => Verdict::Failed {
                transient: true,
                error: io::Error::other(format!(
                    "the store answered {} with a body that is not XML: {e}",
                    a.status
                )),
            },
        };
    }
    let doc: ErrorDoc = if is_error {
        parse(&a.body).unwrap_or_default()
    } else {
        ErrorDoc::default()
    };
    let code = doc.code.as_deref();
    let transient = a.status.is_server_error()
        || a.status == StatusCode::TOO_MANY_REQUESTS
        || (a.status == StatusCode::CONFLICT && conflict_is_transient(request, code))
        || matches!(
            code,
            Some("InternalError" | "SlowDown" | "ServiceUnavailable" | "RequestTimeout")
        );
    let kind = match (a.status, code) {
        // The upload is gone: aborted (by a signal, or a lifecycle rule), or completed.
        (_, Some("NoSuchUpload")) => io::ErrorKind::Interrupted,
        (StatusCode::NOT_FOUND, _) | (_, Some("NoSuchKey")) => io::ErrorKind::NotFound,
        (StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED, _) | (_, Some("AccessDenied")) => {
            io::ErrorKind::PermissionDenied
        }
        (StatusCode::PRECONDITION_FAILED, _)
        | (_, Some("PreconditionFailed" | "ConditionNotMet" | "BlobAlreadyExists")) => {
            io::ErrorKind::AlreadyExists
        }
        // Another write raced this conditional one, and won or is still going on.
        (_, Some("ConditionalRequestConflict")) => io::ErrorKind::ResourceBusy,
        _ => io::ErrorKind::Other,
    };
    let text = format!(
        "the store answered {}{}{}",
        a.status,
        doc.code.map(|c| format!(" {c}")).unwrap_or_default(),
        doc.message.map(|m| format!(": {m}")).unwrap_or_default()
    );
    Verdict::Failed {
        transient,
        error: io::Error::new(kind, text),
    }
}

/// The 409 Conflict answers, by request (`None`: any) and error code, and whether each is worth
/// sending again; a 409 that is not here (`BucketNotEmpty`, `InvalidBlobType`,
/// `BlockCountExceedsLimit`, one without a code) is a state a retry does not change: final.
/// - `OperationAborted`: S3's "a conflicting conditional operation is currently in progress
///   against this resource. Try again.": transient.
/// - `ConditionalRequestConflict` on UploadPartCopy: a write to the source raced the copy's
///   `x-amz-copy-source-if-match`; a retry judges the condition again: transient.
/// - `ConditionalRequestConflict` on CompleteMultipartUpload: another write raced this
///   conditional completion, and S3 says to "re-initiate the multipart upload and re-upload
///   each part": the upload is spent, final (`ResourceBusy`).
/// - `BlobAlreadyExists` on Put Block List: Azure's and Azurite's answer to `If-None-Match: *`
///   over an existing blob (what the Azure SDKs report for `overwrite=False`): final
///   (`AlreadyExists`, as a 412).
const CONFLICTS: &[(Option<Request>, &str, bool)] = &[
    (None, "OperationAborted", true),
    (Some(Request::CopyPart), "ConditionalRequestConflict", true),
    (Some(Request::Complete), "ConditionalRequestConflict", false),
    (Some(Request::CommitBlocks), "BlobAlreadyExists", false),
];

/// Whether a 409 Conflict with error `code` to `request` is worth sending again ([`CONFLICTS`]).
fn conflict_is_transient(request: Request, code: Option<&str>) -> bool {
    CONFLICTS
        .iter()
        .find(|(r, c, _)| r.is_none_or(|r| r == request) && code == Some(*c))
        .is_some_and(|&(_, _, transient)| transient)
}

/// The name of an XML document's root element, read to its end; `None` for a body without one
/// (empty, or whitespace only); an error for a body that is not one well-formed document (text
/// outside the root, a second root, a document cut short).
fn root_element(body: &[u8]) -> Result<Option<String>, String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(body);
    let mut buf = Vec::new();
    let (mut root, mut depth, mut closed) = (None, 0usize, false);
    loop {
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| e.to_string())?;
        match event {
            Event::Start(_) | Event::Empty(_) if closed => {
                return Err("a second element after the root".into())
            }
            Event::Start(ref e) | Event::Empty(ref e) if depth == 0 => {
                root = Some(String::from_utf8_lossy(e.name().as_ref()).into_owned());
                if matches!(event, Event::Empty(_)) {
                    closed = true;
                } else {
                    depth = 1;
                }
            }
            Event::Start(_) => depth += 1,
            Event::End(_) => {
                depth -= 1;
                closed = depth == 0;
            }
            Event::Text(t) if depth == 0 && !t.iter().all(u8::is_ascii_whitespace) => {
                return Err("text outside the root element".into())
            }
            Event::Eof if depth > 0 => return Err("the document is cut short".into()),
            Event::Eof => return Ok(root),
            _ => {}
        }
        buf.clear();
    }
}

/// The whole document, deserialized (an error names what is missing or malformed).
pub(crate) fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> io::Result<T> {
    quick_xml::de::from_reader(body).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the store's answer cannot be read: {e}"),
        )
    })
}

/// A result that carries the new ETag (CopyPartResult, CompleteMultipartUploadResult).
#[derive(serde::Deserialize)]
pub(crate) struct ETagged {
    #[serde(rename = "ETag")]
    pub(crate) e_tag: String,
}

/// S3's error document.
#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct ErrorDoc {
    code: Option<String>,
    message: Option<String>,
}

pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status: StatusCode::from_u16(status).unwrap(),
            headers: http::HeaderMap::new(),
            body: Bytes::from(body.to_string()),
        }
    }

    type Judged = Result<(), (bool, io::ErrorKind, String)>;

    fn verdict(status: u16, body: &str, request: Request) -> Judged {
        match judge(&answer(status, body), request) {
            Verdict::Done => Ok(()),
            Verdict::Failed { transient, error } => {
                Err((transient, error.kind(), error.to_string()))
            }
        }
    }

    /// A completion or a copy succeeds only with its result document, read whole: an error
    /// document after any amount of whitespace (S3's keep-alive), a missing or other document
    /// fail, and which failures are retried.
    #[test]
    fn answers_are_judged_by_their_whole_document() {
        const DONE: Request = Request::Complete;
        let ok = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUploadResult \
                  xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Location>l</Location>\
                  <Bucket>b</Bucket><Key>k</Key><ETag>&quot;3858f6-9&quot;</ETag>\
                  </CompleteMultipartUploadResult>";
        assert_eq!(verdict(200, ok, DONE), Ok(()));
        let done: ETagged = parse(ok.as_bytes()).unwrap();
        assert_eq!(done.e_tag, "\"3858f6-9\"");
        for pad in [0, 250, 255, 256, 300, 70_000] {
            let late = format!(
                "{}<?xml version=\"1.0\"?><Error><Code>InternalError</Code>\
                 <Message>We encountered an internal error.</Message></Error>",
                " \n".repeat(pad / 2)
            );
            let (transient, _, text) = verdict(200, &late, DONE).unwrap_err();
            assert!(transient, "{pad}");
            assert!(
                text.contains("200 OK InternalError: We encountered"),
                "{text}"
            );
            let denied = late.replace("InternalError", "AccessDenied");
            let (transient, kind, _) = verdict(200, &denied, DONE).unwrap_err();
            assert!(
                !transient && kind == io::ErrorKind::PermissionDenied,
                "{pad}"
            );
        }
        // moto 5.2's name for the same document.
        let moto = ok.replace("UploadResult", "UploadResponse");
        assert_eq!(verdict(200, &moto, DONE), Ok(()));
        // Only for the completion: another request's document is its own name alone.
        let listing = Request::Check(Some("BlockList"));
        assert!(verdict(200, "<Other></Other>", listing).is_err());
        assert!(verdict(200, "<BlockListResponse></BlockListResponse>", listing).is_err());
        let (transient, _, text) =
            verdict(200, "<CopyPartResult><ETag>x</ETag></CopyPartResult>", DONE).unwrap_err();
        assert!(!transient && text.contains("<CopyPartResult>"), "{text}");
        for (body, why) in [
            ("", "an empty body"),
            ("   \n  ", "an empty body"),
            ("<CompleteMultipartUploadResult><ETag>", "not XML"),
            (
                "<CompleteMultipartUploadResult><ETag>x</ETag></CompleteMultipartUploadResult>\
                 <Error><Code>InternalError</Code></Error>",
                "not XML",
            ),
            ("garbage", "not XML"),
        ] {
            let (transient, _, text) = verdict(200, body, DONE).unwrap_err();
            assert!(transient, "{body}");
            assert!(text.contains(why), "{body}: {text}");
        }
        let (_, kind, text) = verdict(
            412,
            "<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions \
             you specified did not hold</Message></Error>",
            DONE,
        )
        .unwrap_err();
        assert_eq!(kind, io::ErrorKind::AlreadyExists);
        assert!(
            text.contains("412 Precondition Failed PreconditionFailed"),
            "{text}"
        );
        let (transient, kind, _) =
            verdict(404, "<Error><Code>NoSuchUpload</Code></Error>", DONE).unwrap_err();
        assert!(!transient && kind == io::ErrorKind::Interrupted);
        let (transient, kind, _) =
            verdict(404, "<Error><Code>NoSuchKey</Code></Error>", DONE).unwrap_err();
        assert!(!transient && kind == io::ErrorKind::NotFound);
        assert!(verdict(503, "", DONE).unwrap_err().0);
        let copy = "<CopyPartResult><LastModified>2026-01-01T00:00:00Z</LastModified>\
                    <ETag>&quot;9b2cf&quot;</ETag></CopyPartResult>";
        assert_eq!(verdict(200, copy, Request::CopyPart), Ok(()));
        let copied: ETagged = parse(copy.as_bytes()).unwrap();
        assert_eq!(copied.e_tag, "\"9b2cf\"");
        assert!(parse::<ETagged>(b"<CopyPartResult></CopyPartResult>").is_err());
        assert_eq!(escape("\"x\"&"), "&quot;x&quot;&amp;");
        // Azure's Put Block List answers 201 with no body; its failed condition is 412.
        assert_eq!(verdict(201, "", Request::CommitBlocks), Ok(()));
        let (_, kind, _) = verdict(
            412,
            "<?xml version=\"1.0\"?><Error><Code>ConditionNotMet</Code></Error>",
            Request::CommitBlocks,
        )
        .unwrap_err();
        assert_eq!(kind, io::ErrorKind::AlreadyExists);
    }

    /// Every 409 a request of ours can get, judged by the table `CONFLICTS`: S3's
    /// OperationAborted is retried; a conditional completion's ConditionalRequestConflict is
    /// final (the upload is spent), a copy's retried; Azure's and Azurite's BlobAlreadyExists
    /// (a failed `If-None-Match: *` on Put Block List) is "the object exists", at once; any
    /// other 409 is final.
    #[test]
    fn conflicts_are_judged_by_request_and_code() {
        let error =
            |code: &str| format!("<?xml version=\"1.0\"?><Error><Code>{code}</Code></Error>");
        use io::ErrorKind::{AlreadyExists, Other, ResourceBusy};
        for (request, code, transient, kind) in [
            (Request::Complete, "OperationAborted", true, Other),
            (Request::CopyPart, "OperationAborted", true, Other),
            (
                Request::Complete,
                "ConditionalRequestConflict",
                false,
                ResourceBusy,
            ),
            (
                Request::CopyPart,
                "ConditionalRequestConflict",
                true,
                ResourceBusy,
            ),
            (
                Request::CommitBlocks,
                "BlobAlreadyExists",
                false,
                AlreadyExists,
            ),
            (Request::CommitBlocks, "InvalidBlobType", false, Other),
            (Request::Complete, "BucketNotEmpty", false, Other),
        ] {
            let (t, k, text) = verdict(409, &error(code), request).unwrap_err();
            assert_eq!((t, k), (transient, kind), "{request:?} {code}");
            assert!(text.contains(&format!("409 Conflict {code}")), "{text}");
        }
        // Azurite's own body, whole.
        let azurite = "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>BlobAlreadyExists\
                       </Code><Message>The specified blob already exists.\nRequestId:1\n\
                       Time:2026-01-01T00:00:00.000Z</Message></Error>";
        let (t, k, _) = verdict(409, azurite, Request::CommitBlocks).unwrap_err();
        assert!(!t && k == AlreadyExists);
        // A 409 without a body says nothing worth waiting for.
        let (t, k, _) = verdict(409, "", Request::Complete).unwrap_err();
        assert!(!t && k == Other);
    }
}
