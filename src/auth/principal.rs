//! `Principal`: the key behind a request (found by `api::authenticate`), and the checks every
//! handler makes with it (tier, company, privilege, access, view binding).

use std::sync::Arc;

use super::keys::{ApiKey, KeyKind, Privilege, Tier};
use crate::error::{ApiError, ApiResult};
use crate::ids::{CompanyId, ProjectId};

/// The authenticated caller of one request.
#[derive(Debug, Clone)]
pub struct Principal {
    pub key: Arc<ApiKey>,
    /// The company's plan at the time of the request.
    pub tier: Tier,
}

/// Where a resource sits in the tenancy tree, for access checks.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scope<'a> {
    pub company: CompanyId,
    pub project: Option<ProjectId>,
    pub database: Option<&'a str>,
    pub grid: Option<&'a str>,
    pub view: Option<&'a str>,
}

impl Principal {
    /// The user name written to `lastModifiedBy`.
    pub fn user(&self) -> &str {
        &self.key.user
    }

    pub fn company_id(&self) -> CompanyId {
        self.key.company_id
    }

    /// Refuses a call that needs a higher plan than the company has.
    pub fn require_tier(&self, needed: Tier) -> ApiResult<()> {
        if self.tier >= needed {
            return Ok(());
        }
        let plans = match needed {
            Tier::Team => "the Team or Enterprise plan",
            Tier::Enterprise | Tier::Free => "the Enterprise plan",
        };
        Err(ApiError::access_denied(format!(
            "This operation requires {plans}; the company is on the {} plan.",
            self.tier.plan_name()
        )))
    }

    /// Refuses anything but the server's admin key.
    pub fn require_admin(&self) -> ApiResult<()> {
        if self.key.admin {
            Ok(())
        } else {
            Err(ApiError::access_denied("Only the server's admin key may manage companies."))
        }
    }

    /// Whether the resource at `scope` is visible at all: same company, and for a view key only
    /// its own view. Resources of other companies are reported as not found by the caller.
    pub fn sees(&self, scope: &Scope<'_>) -> bool {
        if scope.company != self.key.company_id {
            return false;
        }
        match &self.key.kind {
            KeyKind::Company { access, .. } => match scope.project {
                Some(project) => access.reaches(project, scope.database, scope.grid),
                None => true,
            },
            KeyKind::View { view_id } => scope.view == Some(view_id.as_str()),
        }
    }

    /// Checks that this key may act on the resource at `scope` with `needed` privilege.
    /// Another company's resource answers `not_found` (existence does not leak); a known
    /// resource the key may not touch answers 403 accessDenied.
    pub fn authorize(
        &self,
        scope: &Scope<'_>,
        needed: Privilege,
        not_found: impl FnOnce() -> ApiError,
    ) -> ApiResult<()> {
        if scope.company != self.key.company_id {
            return Err(not_found());
        }
        match &self.key.kind {
            KeyKind::View { view_id } => {
                if scope.view != Some(view_id.as_str()) {
                    return Err(ApiError::access_denied(format!(
                        "This key is bound to view \"{view_id}\" and cannot reach this resource."
                    )));
                }
                if needed > Privilege::Write {
                    return Err(ApiError::access_denied(
                        "A view key may read and write records only; this needs a company key.",
                    ));
                }
                Ok(())
            }
            KeyKind::Company { access, .. } => {
                if self.key.privilege() < needed {
                    return Err(ApiError::access_denied(format!(
                        "This operation needs the '{}' privilege.",
                        needed.as_str()
                    )));
                }
                let reachable = match scope.project {
                    Some(project) => access.reaches(project, scope.database, scope.grid),
                    None => true,
                };
                if reachable {
                    Ok(())
                } else {
                    Err(ApiError::access_denied("This key has no access to this resource."))
                }
            }
        }
    }

    /// Checks a company-wide privilege (projects, databases, keys): view keys never have one.
    pub fn require_company_privilege(&self, needed: Privilege) -> ApiResult<()> {
        match &self.key.kind {
            KeyKind::View { .. } => Err(ApiError::access_denied(
                "A view key may read and write records only; this needs a company key.",
            )),
            KeyKind::Company { .. } if self.key.privilege() < needed => {
                Err(ApiError::access_denied(format!(
                    "This operation needs the '{}' privilege.",
                    needed.as_str()
                )))
            }
            KeyKind::Company { .. } => Ok(()),
        }
    }
}
