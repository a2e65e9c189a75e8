//! `GET /admin/v1/api-keys/current`: what the calling key is (kind, privileges, access, view,
//! company and its plan), never its secret or hash. The web console asks it once at sign-in to
//! offer only what the key may do; any client may. Reads the request's `Principal` only.

use actix_web::{get, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use super::admin::KeyBody;
use super::ok;
use crate::auth::{KeyKind, Principal, Privilege, Tier};
use crate::error::ApiResult;

/// The calling key as its holder may see it: the key as `/admin/v1/api-keys` lists it (never
/// the secret), with every privilege it holds, and its company's plan.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CurrentKeyBody {
    /// `privileges` lists implied ones too (`manage` lists `read`, `write` and `manage`); a
    /// view key reads and writes its view's records.
    #[serde(flatten)]
    pub key: KeyBody,
    #[schema(value_type = i64)]
    pub company_id: crate::ids::CompanyId,
    /// The company's plan: `free`, `team` or `enterprise`.
    pub tier: &'static str,
    /// Whether this is the server's admin key (it manages companies).
    pub admin: bool,
}

const LADDER: [Privilege; 4] =
    [Privilege::Read, Privilege::Write, Privilege::Manage, Privilege::Owner];

fn tier_name(tier: Tier) -> &'static str {
    match tier {
        Tier::Free => "free",
        Tier::Team => "team",
        Tier::Enterprise => "enterprise",
    }
}

fn current_key(p: &Principal) -> CurrentKeyBody {
    let key = &p.key;
    let mut body = KeyBody::new(key, None);
    if let KeyKind::Company { .. } = &key.kind {
        let top = key.privilege();
        body.privileges = LADDER.iter().filter(|l| **l <= top).map(|l| l.as_str()).collect();
    }
    CurrentKeyBody {
        key: body,
        company_id: key.company_id,
        tier: tier_name(p.tier),
        admin: key.admin,
    }
}

#[utoipa::path(tag = "admin", responses((status = 200, body = CurrentKeyBody), (status = 401, description = "no valid key")))]
#[get("/admin/v1/api-keys/current")]
async fn get_current_key(p: Principal) -> ApiResult<HttpResponse> {
    ok(&current_key(&p))
}

pub fn configure(cfg: &mut ServiceConfig<'_>) {
    cfg.service(get_current_key);
}
