"""Queries and a small workspace in several languages and scripts, for the
``openclaw`` profile's keyword extraction and search parity (OpenClaw 2026.9.6
has stop words for English, Spanish, Portuguese, Arabic, Chinese, Korean and
Japanese, and splits CJK and Hangul its own way)."""

from __future__ import annotations

QUERIES: list[str] = [
    # Spanish
    "¿Qué dijo María ayer sobre el proyecto de Berlín?",
    "cuándo fue la reunión con los clientes",
    "Por favor, ayuda con la mañana del lunes",
    "dónde están las notas de la conferencia",
    # Portuguese
    "O que você disse ontem sobre a viagem para Lisboa?",
    "quando foi a reunião com a equipe de vendas",
    "onde estão os documentos da minha avó",
    # Arabic
    "ماذا قال أحمد عن المشروع في القاهرة؟",
    "متى كان الاجتماع مع الفريق",
    "من فضلك ساعد في العثور على الملاحظات",
    # Chinese
    "之前讨论的那个方案",
    "我们昨天说的部署问题是什么？",
    "请告诉我关于数据库迁移的事情",
    "为什么服务器在周末宕机了",
    "北京的会议时间和地点",
    # Japanese
    "昨日話したデプロイの問題はどうなった？",
    "東京オフィスの会議はいつですか",
    "これはテストです",
    "プロジェクトの締め切りを教えて",
    "ひらがなだけのしつもん",
    "React コンポーネントの設計について",
    # Korean
    "어제 회의에서 결정한 내용은?",
    "서울 사무실의 주소를 알려줘",
    "프로젝트를 언제까지 끝내야 해요",
    "우리는 데이터베이스에서 문제를 찾았다",
    "API에서 오류가 발생했어요",
    "그것은 정말 좋은 아이디어였다",
    "ㅋㅋ 이거 뭐야",
    # other scripts, no stop words of their own
    "Что сказала Анна о проекте?",
    "Τι είπε η Μαρία για το ταξίδι;",
    "परियोजना की समय सीमा क्या है",
    "โครงการนี้เสร็จเมื่อไหร่",
    "שלום מה שלומך היום",
    # mixed, symbols, emoji, full width
    "deploy 🚀 on Friday with Alice",
    "café crème brûlée recipe",
    "ＡＰＩ　キー　の　場所",
    "C++ vs Rust: which is faster?",
    "$100 budget for 2024 — approved?",
    "naïve résumé Zürich Ærø",
    "中文 and English mixed 查询",
    "🙂🙂 ???",
    "the the the and of",
    "  ",
    "x",
    "İstanbul'daki toplantı ne zaman?",
    "STRASSE straße ΟΔΟΣ",
    "user_id 42 and user-name",
]

#: a workspace whose files hold text in those languages (dated and not)
FILES: dict[str, str] = {
    "MEMORY.md": (
        "# Personas\n- María lidera el proyecto de Berlín\n- Ana viaja para Lisboa com a equipe\n"
        "- 张伟负责数据库迁移方案\n- 田中さんは東京オフィスの会議を担当\n"
        "- 김민수는 서울 사무실에서 일한다\n- أحمد يدير المشروع في القاهرة\n"
    ),
    "memory/2026-03-02.md": (
        "# 2026-03-02\n\n## Reunión\nLa reunión con los clientes fue el lunes por la mañana.\n"
        "Las notas de la conferencia están en la carpeta compartida.\n\n"
        "## Reunião\nA reunião com a equipe de vendas foi ontem; os documentos da avó estão "
        "no cofre.\n"
    ),
    "memory/2026-03-03.md": (
        "# 2026-03-03\n\n## 讨论\n我们讨论了部署方案，服务器在周末宕机了。\n"
        "北京的会议时间是周三下午，地点在国贸。\n\n"
        "## 会議\n昨日話したデプロイの問題は解決しました。\nプロジェクトの締め切りは金曜日です。\n"
        "Reactコンポーネントの設計をレビューしました。\n"
    ),
    "memory/2026-03-04.md": (
        "# 2026-03-04\n\n## 회의\n어제 회의에서 데이터베이스 문제를 찾았다.\n"
        "API에서 오류가 발생했어요. 프로젝트는 금요일까지 끝내야 해요.\n\n"
        "## اجتماع\nكان الاجتماع مع الفريق يوم الأحد، والملاحظات في المجلد.\n"
    ),
    "memory/notes/recetas.md": (
        "# Café\ncafé crème brûlée recipe from Zürich\n\n# Viaje\nΤο ταξίδι της Μαρίας\n"
        "Анна говорила о проекте\nपरियोजना की समय सीमा शुक्रवार है\n"
    ),
    "memory/notes/deploy.md": (
        "# Deploy\ndeploy 🚀 on Friday with Alice; C++ and Rust builds\n"
        "budget $100 approved for 2024\nuser_id 42 and user-name fields\n"
    ),
}
