//! Admin subcommands on a data directory (the server must not be running on it): the same
//! operations as `/admin/v1/api-keys` and `/admin/v1/companies`, printing the same JSON.

use std::io::Write;

use clap::Subcommand;

use gridd::api::admin::KeyBody;
use gridd::auth::{Access, KeyKind, Privilege, Tier};
use gridd::catalog::tenancy::KeySpec;
use gridd::catalog::{Exec, Supervisor};
use gridd::error::ApiResult;
use gridd::{Config, Node};

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key and print it (the secret is shown only here).
    Create {
        #[arg(long)]
        name: String,
        #[arg(long)]
        user: Option<String>,
        /// Company id (default: the bootstrap company).
        #[arg(long)]
        company: Option<i64>,
        /// Comma-separated: read, write, manage, owner.
        #[arg(long, value_delimiter = ',', default_value = "read")]
        privileges: Vec<String>,
        /// Limit the key to these project ids (default: all).
        #[arg(long, value_delimiter = ',')]
        projects: Vec<i64>,
        #[arg(long, value_delimiter = ',')]
        databases: Vec<String>,
        #[arg(long, value_delimiter = ',')]
        grids: Vec<String>,
        /// Make a view key bound to this view instead of a company key.
        #[arg(long)]
        view_id: Option<String>,
    },
    /// List a company's keys (without secrets).
    List {
        #[arg(long)]
        company: Option<i64>,
    },
    /// Revoke a key by id.
    Revoke {
        id: String,
        #[arg(long)]
        company: Option<i64>,
    },
}

#[derive(Debug, Subcommand)]
pub enum CompaniesCommand {
    /// Create a company with a project, a database and an owner key.
    Create {
        #[arg(long)]
        name: String,
        #[arg(long, default_value = "free")]
        tier: String,
    },
    /// Change a company's plan.
    SetTier { id: i64, tier: String },
    /// Delete a company and everything in it.
    Delete { id: i64 },
}

pub enum AdminCommand {
    Keys(KeysCommand),
    Companies(CompaniesCommand),
}

/// Why an admin command did nothing; `main` prints it and exits with a failure.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// An argument the command does not know (a tier, a privilege).
    #[error("{0}")]
    Usage(String),
    /// The data directory could not be opened.
    #[error(transparent)]
    Start(#[from] gridd::StartupError),
    /// The catalogue refused the command (its API message).
    #[error("{0}")]
    Refused(String),
    /// The catalogue stopped before it answered.
    #[error("{0}")]
    Stopped(#[from] actix::MailboxError),
    /// The answer could not be printed.
    #[error("{0}")]
    Output(String),
}

fn parse_tier(text: &str) -> Result<Tier, CliError> {
    Tier::parse(text).ok_or_else(|| {
        CliError::Usage(format!("unknown tier {text}: expected free, team or enterprise"))
    })
}

fn key_spec(
    name: String,
    user: Option<String>,
    privileges: Vec<String>,
    access: Access,
    view_id: Option<String>,
) -> Result<KeySpec, CliError> {
    let kind = match view_id {
        Some(view_id) => KeyKind::View { view_id },
        None => KeyKind::Company {
            privileges: privileges
                .iter()
                .map(|p| {
                    Privilege::parse(p)
                        .ok_or_else(|| CliError::Usage(format!("unknown privilege {p}")))
                })
                .collect::<Result<_, _>>()?,
            access,
        },
    };
    Ok(KeySpec { name, user, kind, view_grid: None })
}

/// A command's work on the supervisor, answering the JSON it prints.
type Operation = Box<dyn FnOnce(&mut Supervisor) -> ApiResult<serde_json::Value> + Send>;

/// What a command does on the supervisor.
fn operation(cmd: AdminCommand) -> Result<Operation, CliError> {
    match cmd {
        AdminCommand::Keys(cmd) => key_operation(cmd),
        AdminCommand::Companies(cmd) => company_operation(cmd),
    }
}

/// What a `keys` command does.
fn key_operation(cmd: KeysCommand) -> Result<Operation, CliError> {
    Ok(match cmd {
        KeysCommand::Create {
            name,
            user,
            company,
            privileges,
            projects,
            databases,
            grids,
            view_id,
        } => {
            let all = projects.is_empty() && databases.is_empty() && grids.is_empty();
            let spec = key_spec(
                name,
                user,
                privileges,
                Access { all, projects, databases, grids },
                view_id,
            )?;
            Box::new(move |s| {
                let p = s.owner_principal(company)?;
                let (key, secret) = s.create_key(&p, spec)?;
                Ok(serde_json::to_value(KeyBody::new(&key, Some(secret))).unwrap_or_default())
            })
        }
        KeysCommand::List { company } => Box::new(move |s| {
            let p = s.owner_principal(company)?;
            let keys = s.list_keys(&p)?;
            Ok(serde_json::to_value(keys.iter().map(|k| KeyBody::new(k, None)).collect::<Vec<_>>())
                .unwrap_or_default())
        }),
        KeysCommand::Revoke { id, company } => Box::new(move |s| {
            let p = s.owner_principal(company)?;
            s.revoke_key(&p, &id)?;
            Ok(serde_json::json!({"revoked": id}))
        }),
    })
}

/// What a `companies` command does.
fn company_operation(cmd: CompaniesCommand) -> Result<Operation, CliError> {
    Ok(match cmd {
        CompaniesCommand::Create { name, tier } => {
            let tier = parse_tier(&tier)?;
            Box::new(move |s| {
                let p = s.owner_principal(None)?;
                let made = s.create_company(&p, &name, tier)?;
                Ok(serde_json::json!({
                    "id": made.company.id, "name": made.company.name, "tier": tier_name(tier),
                    "projectId": made.project_id, "databaseId": made.database_id, "ownerKey": made.owner_key,
                }))
            })
        }
        CompaniesCommand::SetTier { id, tier } => {
            let tier = parse_tier(&tier)?;
            Box::new(move |s| {
                let p = s.owner_principal(None)?;
                let c = s.set_company_tier(&p, id, tier)?;
                Ok(serde_json::json!({"id": c.id, "name": c.name, "tier": tier_name(c.tier)}))
            })
        }
        CompaniesCommand::Delete { id } => Box::new(move |s| {
            let p = s.owner_principal(None)?;
            s.delete_company(&p, id)?;
            Ok(serde_json::json!({"deleted": id}))
        }),
    })
}

fn tier_name(t: Tier) -> &'static str {
    match t {
        Tier::Free => "free",
        Tier::Team => "team",
        Tier::Enterprise => "enterprise",
    }
}

/// Runs one admin command on the configured data directory and prints its JSON.
pub fn run(config: Config, cmd: AdminCommand) -> Result<(), CliError> {
    let op = operation(cmd)?;
    actix_web::rt::System::new().block_on(async move {
        let node = Node::start(&config)?;
        let result = node.supervisor.send(Exec::new(op)).await;
        node.stop();
        let value = result?.map_err(|e| CliError::Refused(e.message))?;
        let text =
            serde_json::to_string_pretty(&value).map_err(|e| CliError::Output(e.to_string()))?;
        writeln!(std::io::stdout().lock(), "{text}").map_err(|e| CliError::Output(e.to_string()))
    })
}
