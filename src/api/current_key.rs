//! `GET /admin/v1/api-keys/current`: what the calling key is (kind, privileges, access, view,
//! company and its plan), never its secret or hash. The web console asks it once at sign-in to
//! offer only what the key may do; any client may. Reads the request's `Principal` only.

use actix_web::{get, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use super::ok;
use crate::auth::{Access, KeyKind, Principal, Privilege, Tier};
use crate::error::ApiResult;

/// The calling key as its holder may see it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CurrentKeyBody {
    pub id: String,
    pub name: String,
    pub user: String,
    /// `company` or `view`.
    pub kind: &'static str,
    /// Every privilege the key has, implied ones included (`manage` lists `read`, `write` and
    /// `manage`); a view key reads and writes its view's records.
    pub privileges: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub access: Option<Access>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view_id: Option<String>,
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
    let (kind, privileges, access, view_id) = match &key.kind {
        KeyKind::Company { access, .. } => {
            let top = key.privilege();
            let held = LADDER.iter().filter(|l| **l <= top).map(|l| l.as_str()).collect();
            ("company", held, Some(access.clone()), None)
        }
        KeyKind::View { view_id } => ("view", vec!["read", "write"], None, Some(view_id.clone())),
    };
    CurrentKeyBody {
        id: key.id.clone(),
        name: key.name.clone(),
        user: key.user.clone(),
        kind,
        privileges,
        access,
        view_id,
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
