//! Realistic localization data for the benches: record keys like `ui.menu.save.000123`, an
//! English source sentence, six translations in four scripts, a number, a datetime, a workflow
//! state, a flag and tags, from small per-language word lists with a seeded RNG.

#![allow(dead_code)]

use std::time::Instant;

use gridd::grid::columns::{build_column, ColumnRequest};
use gridd::grid::ops::{CellWrite, GridOp, GridState, RecordWrite};
use gridd::grid::schema::Dependency;
use gridd::grid::store::RecordIdentity;
use gridd::grid::value::CellValue;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use rand::SeedableRng;

pub const EN: &[&str] = &[
    "the",
    "settings",
    "were",
    "saved",
    "your",
    "changes",
    "will",
    "apply",
    "after",
    "restart",
    "please",
    "enter",
    "a",
    "valid",
    "email",
    "address",
    "file",
    "could",
    "not",
    "be",
    "opened",
    "network",
    "connection",
    "lost",
    "try",
    "again",
    "later",
    "account",
    "password",
    "updated",
];
pub const DE: &[&str] = &[
    "die",
    "Einstellungen",
    "wurden",
    "gespeichert",
    "Ihre",
    "Änderungen",
    "werden",
    "nach",
    "dem",
    "Neustart",
    "übernommen",
    "bitte",
    "gültige",
    "E-Mail-Adresse",
    "eingeben",
    "Datei",
    "konnte",
    "nicht",
    "geöffnet",
    "Netzwerkverbindung",
    "verloren",
    "später",
    "erneut",
];
pub const FR: &[&str] = &[
    "les",
    "paramètres",
    "ont",
    "été",
    "enregistrés",
    "vos",
    "modifications",
    "seront",
    "appliquées",
    "après",
    "redémarrage",
    "veuillez",
    "saisir",
    "une",
    "adresse",
    "e-mail",
    "valide",
    "fichier",
    "n'a",
    "pas",
    "pu",
    "être",
    "ouvert",
    "réessayez",
    "plus",
    "tard",
];
pub const JA: &[&str] = &[
    "設定",
    "を",
    "保存",
    "しました",
    "変更",
    "は",
    "再起動",
    "後",
    "に",
    "反映",
    "されます",
    "有効な",
    "メール",
    "アドレス",
    "入力",
    "してください",
    "ファイル",
    "開けません",
    "でした",
    "ネットワーク",
    "接続",
    "が",
    "切断",
    "後で",
    "もう一度",
];
pub const ZH: &[&str] = &[
    "设置",
    "已",
    "保存",
    "您的",
    "更改",
    "将",
    "在",
    "重启",
    "后",
    "生效",
    "请",
    "输入",
    "有效的",
    "电子邮件",
    "地址",
    "无法",
    "打开",
    "文件",
    "网络",
    "连接",
    "已断开",
    "稍后",
    "重试",
];
pub const AR: &[&str] = &[
    "تم",
    "حفظ",
    "الإعدادات",
    "ستطبق",
    "التغييرات",
    "بعد",
    "إعادة",
    "التشغيل",
    "يرجى",
    "إدخال",
    "عنوان",
    "بريد",
    "إلكتروني",
    "صالح",
    "تعذر",
    "فتح",
    "الملف",
    "فقد",
    "الاتصال",
    "بالشبكة",
    "حاول",
    "مرة",
    "أخرى",
    "لاحقا",
];
pub const RU: &[&str] = &[
    "настройки",
    "сохранены",
    "ваши",
    "изменения",
    "вступят",
    "в",
    "силу",
    "после",
    "перезапуска",
    "пожалуйста",
    "введите",
    "действительный",
    "адрес",
    "электронной",
    "почты",
    "не",
    "удалось",
    "открыть",
    "файл",
    "соединение",
    "потеряно",
    "повторите",
    "попытку",
];
pub const AREAS: &[&str] = &["ui", "web", "mobile", "email", "legal"];
pub const SECTIONS: &[&str] = &["menu", "dialog", "toast", "settings", "onboarding", "errors"];
pub const ITEMS: &[&str] = &["settings", "save", "title", "body", "button", "hint", "label"];
pub const STATES: &[&str] = &["draft", "in review", "approved", "final"];
pub const TAGS: &[&str] =
    &["ui", "marketing", "legal", "urgent", "plural", "placeholder", "tooltip"];
pub const USERS: &[&str] = &["alice", "bob", "carol", "dmitri", "yuki", "fatima"];

/// One language: its word list, the length to reach, and the word separator.
pub struct Language {
    pub words: &'static [&'static str],
    pub chars: usize,
    pub separator: &'static str,
}

pub const LANGUAGES: [Language; 7] = [
    Language { words: EN, chars: 40, separator: " " },
    Language { words: DE, chars: 46, separator: " " },
    Language { words: FR, chars: 46, separator: " " },
    Language { words: JA, chars: 18, separator: "" },
    Language { words: ZH, chars: 14, separator: "" },
    Language { words: AR, chars: 40, separator: " " },
    Language { words: RU, chars: 44, separator: " " },
];

pub fn sentence(rng: &mut StdRng, language: &Language) -> String {
    let mut out = String::new();
    while out.chars().count() < language.chars {
        if !out.is_empty() {
            out.push_str(language.separator);
        }
        out.push_str(language.words.choose(rng).expect("word lists are not empty"));
    }
    out
}

/// A record's key and its 12 cell values.
pub struct Record {
    pub id: String,
    pub path: String,
    pub values: Vec<CellValue>,
}

pub fn record(rng: &mut StdRng, n: usize, prefix: &str) -> Record {
    let area = AREAS[n % AREAS.len()];
    let section = SECTIONS[(n / 7) % SECTIONS.len()];
    let item = ITEMS[(n / 3) % ITEMS.len()];
    let mut values: Vec<CellValue> =
        LANGUAGES.iter().map(|language| CellValue::Text(sentence(rng, language))).collect();
    values.push(CellValue::Number(f64::from(rng.gen_range(0..500u32))));
    values.push(CellValue::Datetime(1_700_000_000_000 + rng.gen_range(0..40_000_000_000i64)));
    values.push(CellValue::Text(STATES[rng.gen_range(0..STATES.len())].to_owned()));
    values.push(CellValue::Boolean(rng.gen_bool(0.3)));
    let tag_count = rng.gen_range(0..4);
    let tags = TAGS.choose_multiple(rng, tag_count);
    values.push(CellValue::List(tags.map(|t| (*t).to_owned()).collect()));
    Record {
        id: format!("{prefix}{area}.{section}.{item}.{n:06}"),
        path: format!("{area}/{section}"),
        values,
    }
}

/// Column requests for a 12-column localization grid: English source, six targets (each
/// depending on English), number, datetime, workflow state, flag, tags.
pub fn column_requests() -> Vec<serde_json::Value> {
    let codes = ["enUS", "deDE", "frFR", "jaJP", "zhCN", "arSA", "ruRU"];
    let mut columns: Vec<serde_json::Value> = codes
        .iter()
        .enumerate()
        .map(|(i, code)| {
            let kind = if i == 0 { "sourceLanguage" } else { "targetLanguage" };
            serde_json::json!({"id": code, "name": code, "type": "language", "languageCode": code, "localizationType": kind})
        })
        .collect();
    columns.push(serde_json::json!({"id": "count", "name": "Count", "type": "number"}));
    columns.push(serde_json::json!({"id": "due", "name": "Due", "type": "datetime"}));
    let states: Vec<serde_json::Value> =
        STATES.iter().map(|s| serde_json::json!({"value": s})).collect();
    columns.push(serde_json::json!({"id": "state", "name": "State", "type": "singleSelection", "selection": {"options": states}}));
    columns.push(serde_json::json!({"id": "final", "name": "Final", "type": "boolean"}));
    let tags: Vec<serde_json::Value> =
        TAGS.iter().map(|s| serde_json::json!({"value": s})).collect();
    columns.push(serde_json::json!({"id": "tags", "name": "Tags", "type": "multipleSelections", "selection": {"options": tags}}));
    columns
}

/// Records per `AddRecords` op while building.
pub const BATCH: usize = 1000;

/// `BATCH` records from number `start` on, as writes of the columns `ids`.
pub fn batch(rng: &mut StdRng, start: usize, ids: &[String], prefix: &str) -> Vec<RecordWrite> {
    (start..start + BATCH)
        .map(|n| {
            let rec = record(rng, n, prefix);
            RecordWrite {
                id: rec.id,
                path: rec.path,
                new_id: None,
                new_path: None,
                cells: ids
                    .iter()
                    .zip(rec.values)
                    .map(|(id, value)| CellWrite {
                        column_id: id.clone(),
                        value: Some(value),
                        dependency_status: None,
                        source_status: None,
                    })
                    .collect(),
                mark_mt: false,
            }
        })
        .collect()
}

/// A branch with the 12 columns of `column_requests` (English the source of the six other
/// languages) and `records` records, built through `AddRecords` ops; returns the column ids.
pub fn build_state(records: usize) -> (GridState, Vec<String>) {
    let started = Instant::now();
    let mut state = GridState::new("view", Vec::new(), RecordIdentity::RecordId);
    let mut ids = Vec::new();
    for body in column_requests() {
        let req: ColumnRequest = serde_json::from_value(body).expect("valid column");
        let column = build_column(&state.schema, &req).expect("valid column");
        ids.push(column.id.clone());
        state.apply(&GridOp::CreateColumn { column, view_id: None, editable: true });
    }
    for (i, target) in ids[1..7].iter().enumerate() {
        state.apply(&GridOp::CreateDependency(Dependency {
            id: format!("dep{i}"),
            source_column_id: ids[0].clone(),
            target_column_id: target.clone(),
        }));
    }
    let mut rng = StdRng::seed_from_u64(0x6772_6964);
    for start in (0..records).step_by(BATCH) {
        let records = batch(&mut rng, start, &ids, "");
        state.apply(&GridOp::AddRecords {
            time_ms: start as i64,
            user: USERS[0].to_owned(),
            records,
        });
    }
    eprintln!("built a {records}-record branch through AddRecords ops in {:?}", started.elapsed());
    (state, ids)
}

/// The query cases of issue 5 (`benches/query.rs`, `examples/query_http.rs`): name, query,
/// sort, offset; pages of 100.
pub const QUERY_CASES: &[(&str, &str, &str, usize)] = &[
    ("eq_selection_page100", r#"{"state": {"=": "approved"}}"#, "", 0),
    (
        "in5_paths_sort_number_offset10000",
        r#"{"_path": {"in": ["ui/menu", "web/dialog", "mobile/toast", "email/settings", "legal/onboarding"]}}"#,
        r#"{"count": "asc"}"#,
        10_000,
    ),
    ("contains_ci_frequent_word", r#"{"enUS": {"contains": "Network"}}"#, "", 0),
    ("contains_ci_rare_phrase", r#"{"enUS": {"contains": "PASSWORD UPDATED"}}"#, "", 0),
    ("contains_ci_cyrillic", r#"{"ruRU": {"contains": "НАСТРОЙКИ"}}"#, "", 0),
    ("regexp_anchored", r#"{"enUS": {"regexp": "^please .* again$"}}"#, "", 0),
    ("regexp_unanchored", r#"{"deDE": {"regexp": "Datei.+nicht"}}"#, "", 0),
    (
        "datetime_range_and_target_not_empty",
        r#"{"due": {"between": ["2024-01-01", "2024-01-31"]}, "deDE": {"isNotEmpty": null}}"#,
        "",
        0,
    ),
    ("sort_text_offset0", "", r#"{"enUS": "asc"}"#, 0),
    ("sort_text_offset500000", "", r#"{"enUS": "asc"}"#, 500_000),
    ("sort_text_desc_offset500000", "", r#"{"enUS": "desc"}"#, 500_000),
];
