//! Realistic localization data, shared by the load generator and gridd's benches: record keys
//! like `ui.menu.save.000123`, an English source sentence, translations in several scripts, a
//! number, a datetime, a workflow state, a flag and tags, from small per-language word lists with a
//! seeded RNG. It knows nothing of HTTP or of gridd's types: cells are [`Cell`]s.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use serde_json::{json, Value};

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

pub const ES: &[&str] = &[
    "la",
    "configuración",
    "se",
    "guardó",
    "sus",
    "cambios",
    "se",
    "aplicarán",
    "después",
    "de",
    "reiniciar",
    "introduzca",
    "una",
    "dirección",
    "de",
    "correo",
    "válida",
    "no",
    "se",
    "pudo",
    "abrir",
    "el",
    "archivo",
    "conexión",
    "perdida",
    "inténtelo",
    "más",
    "tarde",
];
pub const IT: &[&str] = &[
    "le",
    "impostazioni",
    "sono",
    "state",
    "salvate",
    "le",
    "modifiche",
    "verranno",
    "applicate",
    "dopo",
    "il",
    "riavvio",
    "inserisci",
    "un",
    "indirizzo",
    "email",
    "valido",
    "impossibile",
    "aprire",
    "il",
    "file",
    "connessione",
    "persa",
    "riprova",
    "più",
    "tardi",
];
pub const PT: &[&str] = &[
    "as",
    "configurações",
    "foram",
    "salvas",
    "suas",
    "alterações",
    "serão",
    "aplicadas",
    "após",
    "reiniciar",
    "insira",
    "um",
    "endereço",
    "de",
    "e-mail",
    "válido",
    "não",
    "foi",
    "possível",
    "abrir",
    "o",
    "arquivo",
    "conexão",
    "perdida",
    "tente",
    "novamente",
    "mais",
    "tarde",
];
pub const KO: &[&str] = &[
    "설정이",
    "저장되었습니다",
    "변경",
    "사항은",
    "다시",
    "시작한",
    "후",
    "적용됩니다",
    "유효한",
    "이메일",
    "주소를",
    "입력하세요",
    "파일을",
    "열",
    "수",
    "없습니다",
    "네트워크",
    "연결이",
    "끊어졌습니다",
    "나중에",
    "다시",
    "시도하세요",
];

/// One language: its word list, the length to reach, and the word separator.
#[derive(Debug)]
pub struct Language {
    pub code: &'static str,
    pub words: &'static [&'static str],
    pub chars: usize,
    pub separator: &'static str,
}

/// The languages of the base 12-column grid: English (the source) first.
pub const LANGUAGES: [Language; 7] = [
    Language { code: "enUS", words: EN, chars: 40, separator: " " },
    Language { code: "deDE", words: DE, chars: 46, separator: " " },
    Language { code: "frFR", words: FR, chars: 46, separator: " " },
    Language { code: "jaJP", words: JA, chars: 18, separator: "" },
    Language { code: "zhCN", words: ZH, chars: 14, separator: "" },
    Language { code: "arSA", words: AR, chars: 40, separator: " " },
    Language { code: "ruRU", words: RU, chars: 44, separator: " " },
];

/// Target languages a grid of more than 12 columns adds, then two note columns.
pub const EXTRA_LANGUAGES: [Language; 4] = [
    Language { code: "esES", words: ES, chars: 46, separator: " " },
    Language { code: "itIT", words: IT, chars: 46, separator: " " },
    Language { code: "ptBR", words: PT, chars: 46, separator: " " },
    Language { code: "koKR", words: KO, chars: 22, separator: " " },
];

/// The most columns [`columns`] makes: 12 base, 4 extra languages, 4 note columns.
pub const MAX_COLUMNS: usize = 20;

/// A sentence of about `language.chars` characters.
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

/// A cell value, independent of any API.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    Number(f64),
    /// Milliseconds since the Unix epoch.
    Datetime(i64),
    Boolean(bool),
    List(Vec<String>),
}

impl Cell {
    /// The value as gridd's API writes it.
    pub fn to_json(&self) -> Value {
        match self {
            Cell::Text(text) => json!(text),
            Cell::Number(n) => json!(n),
            Cell::Datetime(ms) => json!(iso_utc(*ms)),
            Cell::Boolean(b) => json!(b),
            Cell::List(items) => json!(items),
        }
    }
}

/// `2024-05-01T12:00:00.000Z` for milliseconds since the epoch (proleptic Gregorian, UTC).
pub fn iso_utc(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rest = ms.rem_euclid(86_400_000);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000
    )
}

/// A record's key, path and its 12 base cell values (the columns of [`columns`], in order).
#[derive(Debug)]
pub struct Record {
    pub id: String,
    pub path: String,
    pub values: Vec<Cell>,
}

/// Record number `n`; `prefix` starts its id.
pub fn record(rng: &mut StdRng, n: usize, prefix: &str) -> Record {
    let area = AREAS[n % AREAS.len()];
    let section = SECTIONS[(n / 7) % SECTIONS.len()];
    let item = ITEMS[(n / 3) % ITEMS.len()];
    let mut values: Vec<Cell> =
        LANGUAGES.iter().map(|language| Cell::Text(sentence(rng, language))).collect();
    values.push(Cell::Number(f64::from(rng.gen_range(0..500u32))));
    values.push(Cell::Datetime(1_700_000_000_000 + rng.gen_range(0..40_000_000_000i64)));
    values.push(Cell::Text(STATES[rng.gen_range(0..STATES.len())].to_owned()));
    values.push(Cell::Boolean(rng.gen_bool(0.3)));
    let tag_count = rng.gen_range(0..4);
    let tags = TAGS.choose_multiple(rng, tag_count);
    values.push(Cell::List(tags.map(|t| (*t).to_owned()).collect()));
    Record {
        id: format!("{prefix}{area}.{section}.{item}.{n:06}"),
        path: format!("{area}/{section}"),
        values,
    }
}

/// Values of the columns past the base 12 (`extra` of them, at most 8): more target languages,
/// a translator note, a context, a length limit and a reviewer.
pub fn extra_values(rng: &mut StdRng, extra: usize) -> Vec<Cell> {
    let mut values = Vec::with_capacity(extra);
    for i in 0..extra {
        let value = match EXTRA_LANGUAGES.get(i) {
            Some(language) => Cell::Text(sentence(rng, language)),
            None => note(rng, i),
        };
        values.push(value);
    }
    values
}

/// The value of extra column `i` past the languages.
fn note(rng: &mut StdRng, i: usize) -> Cell {
    match i {
        4 => Cell::Text(sentence(rng, &LANGUAGES[0])),
        5 => Cell::Text(format!(
            "{} / {}",
            SECTIONS.choose(rng).expect("sections"),
            sentence(rng, &LANGUAGES[0])
        )),
        6 => Cell::Number(f64::from(rng.gen_range(20..200u32))),
        _ => Cell::Text(USERS.choose(rng).expect("users").to_string()),
    }
}

/// Column bodies (`POST /v1/views/<id>/columns`) of a localization grid of `count` columns
/// (at most [`MAX_COLUMNS`]): English source, six targets, number, datetime, workflow state,
/// flag, tags, then more targets and note columns. Every target depends on English.
pub fn columns(count: usize) -> Vec<Value> {
    let language = |i: usize, code: &str| {
        let kind = if i == 0 { "sourceLanguage" } else { "targetLanguage" };
        json!({"id": code, "name": code, "type": "language", "languageCode": code, "localizationType": kind})
    };
    let options =
        |values: &[&str]| -> Vec<Value> { values.iter().map(|s| json!({"value": s})).collect() };
    let mut all: Vec<Value> =
        LANGUAGES.iter().enumerate().map(|(i, l)| language(i, l.code)).collect();
    all.push(json!({"id": "count", "name": "Count", "type": "number"}));
    all.push(json!({"id": "due", "name": "Due", "type": "datetime"}));
    all.push(json!({"id": "state", "name": "State", "type": "singleSelection", "selection": {"options": options(STATES)}}));
    all.push(json!({"id": "final", "name": "Final", "type": "boolean"}));
    all.push(json!({"id": "tags", "name": "Tags", "type": "multipleSelections", "selection": {"options": options(TAGS)}}));
    all.extend(EXTRA_LANGUAGES.iter().map(|l| language(1, l.code)));
    all.push(json!({"id": "note", "name": "Translator note", "type": "multipleLines"}));
    all.push(json!({"id": "context", "name": "Context", "type": "singleLine"}));
    all.push(json!({"id": "maxLength", "name": "Max length", "type": "number"}));
    all.push(json!({"id": "reviewer", "name": "Reviewer", "type": "singleLine"}));
    all.truncate(count.min(MAX_COLUMNS));
    all
}

/// Filtered and sorted listings on a grid of [`columns`]: name, `query`, `sort`, offset; pages of
/// 100. The first cases need only the base 12 columns.
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn iso_utc_matches_known_instants() {
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_utc(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(iso_utc(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn records_fit_the_columns() {
        let mut rng = StdRng::seed_from_u64(1);
        let rec = record(&mut rng, 123, "");
        assert_eq!(rec.values.len(), 12);
        assert_eq!(rec.id, "email.errors.label.000123");
        assert_eq!(extra_values(&mut rng, 8).len(), 8);
        assert_eq!(columns(20).len(), 20);
        assert_eq!(columns(12).len(), 12);
    }
}
