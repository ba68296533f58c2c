"""The Hub's database: tables (:mod:`.models`) and engines, sessions, migrations (:mod:`.database`)."""

from hub_server.db.checks import ServerCheck
from hub_server.db.database import Database
from hub_server.db.models import Base, File, Membership, Owner, Project, Release, Token, utcnow
from hub_server.db.records import DamagedBlob, DownloadCount, EvalResult, EvalRollout, RateEvent

__all__ = [
    "Base", "DamagedBlob", "Database", "DownloadCount", "EvalResult", "EvalRollout", "File", "Membership", "Owner",
    "Project", "RateEvent", "Release", "ServerCheck", "Token", "utcnow",
]
