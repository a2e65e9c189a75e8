//! Who may see and change a glossary. A glossary is its company's; view keys never reach one.
//! One linked to no project is company-wide: every company key of the company sees it, and
//! only a key reaching the whole company (`access.all`) manages it. One linked to projects is
//! seen by a key reaching any of them (the project, or one of the linked databases), and
//! managed (updated, deleted) by a key reaching every one.

use super::{Glossary, GlossaryProject};
use crate::auth::{KeyKind, Principal, Scope};

fn reaches(p: &Principal, g: &Glossary, link: &GlossaryProject) -> bool {
    let scope = |database| Scope {
        company: g.company_id,
        project: Some(link.project_id),
        database,
        grid: None,
        view: None,
    };
    p.sees(&scope(None)) || link.database_ids.iter().any(|d| p.sees(&scope(Some(d))))
}

fn company_key(p: &Principal, g: &Glossary) -> Option<bool> {
    match &p.key.kind {
        KeyKind::Company { access, .. } if p.company_id() == g.company_id => Some(access.all),
        KeyKind::Company { .. } | KeyKind::View { .. } => None,
    }
}

/// Whether the key may know of glossary `g` at all.
pub fn visible(p: &Principal, g: &Glossary) -> bool {
    company_key(p, g).is_some()
        && (g.projects.is_empty() || g.projects.iter().any(|link| reaches(p, g, link)))
}

/// Whether the key reaches everything glossary `g` is linked to.
pub fn manages(p: &Principal, g: &Glossary) -> bool {
    match company_key(p, g) {
        None => false,
        Some(all) if g.projects.is_empty() => all,
        Some(_) => g.projects.iter().all(|link| reaches(p, g, link)),
    }
}
