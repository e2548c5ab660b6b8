"""tau2's `mock` domain: users and their to-do tasks (src/tau2/domains/mock/ at 37199f36)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from aecg_bench.benchmarks.tau2.toolkit import AgentToolkit, StrictModel, ToolKind, tool

TaskStatus = Literal["pending", "completed"]


class Task(BaseModel):
    task_id: str = Field(description="Unique identifier for the task")
    title: str = Field(description="Title of the task")
    description: str | None = Field(None, description="Description of the task")
    status: TaskStatus = Field(description="Status of the task")


class User(BaseModel):
    user_id: str = Field(description="Unique identifier for the user")
    name: str = Field(description="User's name")
    tasks: list[str] = Field(description="List of task IDs assigned to the user")


class MockDB(StrictModel):
    """Simple database with users and their tasks."""

    tasks: dict[str, Task] = Field(description="Dictionary of all tasks indexed by task ID")
    users: dict[str, User] = Field(description="Dictionary of all users indexed by user ID")


class MockTools(AgentToolkit):
    """Simple tools for the mock domain."""

    DB = MockDB
    db: MockDB

    @tool(ToolKind.WRITE)
    def create_task(self, user_id: str, title: str, description: str = None) -> Task:  # type: ignore[assignment]  # noqa: RUF013 - tau2's signature, so the schema matches
        """
        Create a new task for a user.

        Args:
            user_id: The ID of the user creating the task
            title: The title of the task
            description: Optional description of the task

        Returns:
            The created task

        Raises:
            ValueError: If the user is not found
        """
        if user_id not in self.db.users:
            raise ValueError(f"User {user_id} not found")
        new = Task(task_id=f"task_{len(self.db.tasks) + 1}", title=title, description=description, status="pending")
        self.db.tasks[new.task_id] = new
        self.db.users[user_id].tasks.append(new.task_id)
        return new

    @tool(ToolKind.READ)
    def get_users(self) -> list[User]:
        """
        Get all users in the database.
        """
        return list(self.db.users.values())

    @tool(ToolKind.WRITE)
    def update_task_status(self, task_id: str, status: TaskStatus) -> Task:
        """
        Update the status of a task.

        Args:
            task_id: The ID of the task to update
            status: The new status of the task

        Returns:
            The updated task

        Raises:
            ValueError: If the task is not found
        """
        if task_id not in self.db.tasks:
            raise ValueError(f"Task {task_id} not found")
        self.db.tasks[task_id].status = status
        return self.db.tasks[task_id]

    # Assertions (not tools): tasks' env_assertions call these by name.

    def assert_number_of_tasks(self, user_id: str, expected_number: int) -> bool:
        if user_id not in self.db.users:
            raise ValueError(f"User {user_id} not found")
        return len(self.db.users[user_id].tasks) == expected_number

    def assert_task_status(self, task_id: str, expected_status: TaskStatus) -> bool:
        if task_id not in self.db.tasks:
            raise ValueError(f"Task {task_id} not found")
        return self.db.tasks[task_id].status == expected_status
