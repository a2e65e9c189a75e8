//! `POST /v1/transmems/<tmId>/segments` (gridd's extension): a script or a CAT tool adds or
//! updates segments one batch at a time, without a TMX file. The body is a JSON array of
//! `{"sourceLanguage", "source", "targetLanguage", "target"}` (1 to `MAX_BATCH` items); each is
//! stored with origin `api` (decisions.md section 13) and the key's user, replacing the
//! translation of the same source in the same language pair (keeping its creation). Every item
//! is checked before anything is written, so a refused batch changes nothing; the write is one
//! flushed batch, answered 200 `{"added", "updated"}`. `manage` on the company, as imports.

use actix_web::{post, web, HttpResponse};
use serde::Deserialize;
use utoipa::ToSchema;

use super::replica::TmChange;
use super::{language, TmRefused};
use crate::api::exec;
use crate::api::ok;
use crate::api::sized_json::JsonBytes;
use crate::auth::{Principal, Privilege};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::tm::segment::{Origin, Segment, Side};
use crate::tm::text::normalize;
use crate::tm::tmx::MAX_SEG_BYTES;

/// Most segments one request writes.
pub const MAX_BATCH: usize = 1000;

/// One segment as the request gives it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SegmentRequest {
    source_language: Option<String>,
    source: Option<String>,
    target_language: Option<String>,
    target: Option<String>,
}

/// Why one item of a batch is refused.
fn item_refused(index: usize, why: TmRefused) -> ApiError {
    let err: ApiError = why.into();
    let code = err.code;
    ApiError::new(code, format!("segments[{index}]: {}", err.message))
}

/// A text side: present, not blank once normalized, at most `MAX_SEG_BYTES`.
fn text(value: Option<String>, name: &'static str) -> Result<String, TmRefused> {
    let text = value.ok_or(TmRefused::Missing(name))?;
    if normalize(&text).is_empty() {
        return Err(TmRefused::Body(format!("{name} is blank")));
    }
    if text.len() > MAX_SEG_BYTES {
        return Err(TmRefused::Body(format!("{name} has more than {MAX_SEG_BYTES} bytes")));
    }
    Ok(text)
}

impl SegmentRequest {
    fn segment(self, user: &str, now_ms: i64) -> Result<Segment, TmRefused> {
        let source_lang = language(self.source_language, "sourceLanguage")?;
        let target_lang = language(self.target_language, "targetLanguage")?;
        if crate::tm::text::language_key(&source_lang)
            == crate::tm::text::language_key(&target_lang)
        {
            return Err(TmRefused::Body("sourceLanguage and targetLanguage are the same".into()));
        }
        let side = |lang, text| Side { lang, text, markup: None };
        Ok(Segment {
            source: side(source_lang, text(self.source, "source")?),
            target: side(target_lang, text(self.target, "target")?),
            created_ms: now_ms,
            created_by: user.to_owned(),
            changed_ms: now_ms,
            changed_by: user.to_owned(),
            origin: Origin::Api,
            props: Vec::new(),
            notes: Vec::new(),
        })
    }
}

/// The batch's segments, every item checked.
fn parse(body: &[u8], user: &str) -> ApiResult<Vec<Segment>> {
    let items: Vec<SegmentRequest> =
        serde_json::from_slice(body).map_err(|e| TmRefused::Body(e.to_string()))?;
    if items.is_empty() || items.len() > MAX_BATCH {
        return Err(ApiError::bad_request(format!(
            "The body is an array of 1 to {MAX_BATCH} segments; it has {}.",
            items.len()
        )));
    }
    let now = chrono::Utc::now().timestamp_millis();
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| item.segment(user, now).map_err(|why| item_refused(i, why)))
        .collect()
}

#[utoipa::path(tag = "transmem", request_body = [SegmentRequest], responses((status = 200, description = "the segments added and updated: {\"added\", \"updated\"}")))]
#[post("/v1/transmems/{tmId}/segments")]
pub(super) async fn write_segments(
    state: web::Data<AppState>,
    p: Principal,
    id: web::Path<String>,
    body: JsonBytes,
) -> ApiResult<HttpResponse> {
    let user = p.user().to_owned();
    let id = id.into_inner();
    let memory = exec(&state, move |s| s.transmem(&p, &id, Privilege::Manage)).await??;
    let segments = parse(&body, &user)?;
    let change = TmChange::Write { segments, position: None };
    ok(&state.transmems.change(&memory.id, change).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_checked_item_by_item() {
        let good = br#"[{"sourceLanguage":"en-US","source":"Save","targetLanguage":"fr-FR","target":"Enregistrer"}]"#;
        let segments = parse(good, "ana").expect("parses");
        assert_eq!(segments[0].origin, Origin::Api);
        assert_eq!(segments[0].changed_by, "ana");
        for bad in [
            &b"[]"[..],
            b"{}",
            br#"[{"sourceLanguage":"en-US","source":"Save","targetLanguage":"en_us","target":"x"}]"#,
            br#"[{"sourceLanguage":"en-US","source":"  ","targetLanguage":"fr","target":"x"}]"#,
            br#"[{"sourceLanguage":"en-US","source":"Save","targetLanguage":"fr"}]"#,
            br#"[{"sourceLanguage":"e n","source":"Save","targetLanguage":"fr","target":"x"}]"#,
            br#"[{"sourceLanguage":"en","source":"Save","targetLanguage":"fr","target":"x","y":1}]"#,
        ] {
            assert!(parse(bad, "ana").is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let many = format!(
            "[{}]",
            vec![
                r#"{"sourceLanguage":"en","source":"a","targetLanguage":"fr","target":"b"}"#;
                1001
            ]
            .join(",")
        );
        assert!(parse(many.as_bytes(), "ana").is_err());
    }
}
