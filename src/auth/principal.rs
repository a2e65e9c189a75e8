//! `Principal`: the key behind a request (found by `api::authenticate`), and the checks every
//! handler makes with it (tier, company, privilege, access, view binding), refused as `Denied`.

use std::sync::Arc;

use super::denied::Denied;
use super::keys::{ApiKey, KeyKind, Privilege, Tier};
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

impl<'a> Scope<'a> {
    /// The scope of grid `grid` (of `database`, `project`, `company`), seen through `view`.
    pub fn of_grid(
        (company, project): (CompanyId, ProjectId),
        database: &'a str,
        grid: &'a str,
        view: Option<&'a str>,
    ) -> Scope<'a> {
        Scope { company, project: Some(project), database: Some(database), grid: Some(grid), view }
    }
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
    pub fn require_tier(&self, needed: Tier) -> Result<(), Denied> {
        if self.tier >= needed {
            Ok(())
        } else {
            Err(Denied::Plan { needed, current: self.tier })
        }
    }

    /// Refuses anything but the server's admin key.
    pub fn require_admin(&self) -> Result<(), Denied> {
        if self.key.admin {
            Ok(())
        } else {
            Err(Denied::NotAdmin)
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
    /// Another company's resource answers `not_found()` (existence does not leak); a known
    /// resource the key may not touch answers `Denied` (403 accessDenied) as the caller's error.
    pub fn authorize<E: From<Denied>>(
        &self,
        scope: &Scope<'_>,
        needed: Privilege,
        not_found: impl FnOnce() -> E,
    ) -> Result<(), E> {
        if scope.company != self.key.company_id {
            return Err(not_found());
        }
        self.may_act(scope, needed).map_err(E::from)
    }

    /// The checks of `authorize` within the key's own company.
    fn may_act(&self, scope: &Scope<'_>, needed: Privilege) -> Result<(), Denied> {
        match &self.key.kind {
            KeyKind::View { view_id } => {
                if scope.view != Some(view_id.as_str()) {
                    return Err(Denied::OtherView { view_id: view_id.clone() });
                }
                if needed > Privilege::Write {
                    return Err(Denied::ViewKey);
                }
                Ok(())
            }
            KeyKind::Company { access, .. } => {
                if self.key.privilege() < needed {
                    return Err(Denied::Privilege(needed));
                }
                let reachable = match scope.project {
                    Some(project) => access.reaches(project, scope.database, scope.grid),
                    None => true,
                };
                if reachable {
                    Ok(())
                } else {
                    Err(Denied::NoAccess)
                }
            }
        }
    }

    /// Checks a company-wide privilege (projects, databases, keys): view keys never have one.
    pub fn require_company_privilege(&self, needed: Privilege) -> Result<(), Denied> {
        match &self.key.kind {
            KeyKind::View { .. } => Err(Denied::ViewKey),
            KeyKind::Company { .. } if self.key.privilege() < needed => {
                Err(Denied::Privilege(needed))
            }
            KeyKind::Company { .. } => Ok(()),
        }
    }
}
