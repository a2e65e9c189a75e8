//! `Denied`: why a key may not do what it asked, as the access checks of `Principal` find it
//! (plan, admin key, privilege, access, view binding). Every case answers 403 accessDenied.
//!
//! A resource the key may not even know of (another company's) is not a `Denied`: the caller
//! answers its own not-found error for it (`Principal::authorize`), so existence does not leak.

use super::keys::{Privilege, Tier};
use crate::error::{Coded, ErrorCode};

/// A refused access check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    /// The company's plan is below the one the call needs.
    #[error(
        "This operation requires {}; the company is on the {} plan.",
        plans(.needed),
        .current.plan_name()
    )]
    Plan { needed: Tier, current: Tier },
    /// Company management asked by a key other than the server's admin key.
    #[error("Only the server's admin key may manage companies.")]
    NotAdmin,
    /// A view key asked for a resource other than its own view.
    #[error("This key is bound to view \"{view_id}\" and cannot reach this resource.")]
    OtherView { view_id: String },
    /// A view key asked for more than reading and writing records.
    #[error("A view key may read and write records only; this needs a company key.")]
    ViewKey,
    /// A company key without the privilege the call needs.
    #[error("This operation needs the '{}' privilege.", .0.as_str())]
    Privilege(Privilege),
    /// A company key whose access does not reach the resource.
    #[error("This key has no access to this resource.")]
    NoAccess,
}

/// The plans that allow a call needing `needed`, as the refusal names them.
fn plans(needed: &Tier) -> &'static str {
    match needed {
        Tier::Team => "the Team or Enterprise plan",
        Tier::Enterprise | Tier::Free => "the Enterprise plan",
    }
}

impl Coded for Denied {
    fn code(&self) -> ErrorCode {
        match self {
            Denied::Plan { .. }
            | Denied::NotAdmin
            | Denied::OtherView { .. }
            | Denied::ViewKey
            | Denied::Privilege(_)
            | Denied::NoAccess => ErrorCode::AccessDenied,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_the_api_s() {
        let plan = Denied::Plan { needed: Tier::Team, current: Tier::Free };
        assert_eq!(
            plan.to_string(),
            "This operation requires the Team or Enterprise plan; the company is on the Free plan."
        );
        assert_eq!(
            Denied::Privilege(Privilege::Manage).to_string(),
            "This operation needs the 'manage' privilege."
        );
        let bound = Denied::OtherView { view_id: "v1".to_owned() };
        assert_eq!(
            bound.to_string(),
            "This key is bound to view \"v1\" and cannot reach this resource."
        );
        assert_eq!(bound.code(), ErrorCode::AccessDenied);
    }
}
