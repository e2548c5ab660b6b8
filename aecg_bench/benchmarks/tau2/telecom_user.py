"""tau2's `telecom` domain, user side: the customer's simulated phone and surroundings
(src/tau2/domains/telecom/user_data_model.py, user_tools.py, environment.py at 37199f36).

The user simulator calls these tools on its own device (tau2's dual control). Names,
docstrings, messages and the network simulation follow tau2's `TelecomUserTools`;
the scenario functions (`break_*`, `turn_*`, `set_user_info`, ...) set up tasks, and
the `assert_*` functions are the tasks' env assertions. `sync` is tau2's
`TelecomEnvironment.sync_tools`, run after every tool call.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field

from aecg_bench.benchmarks.tau2.telecom import BillStatus, LineStatus, TelecomTools
from aecg_bench.benchmarks.tau2.toolkit import StrictModel, ToolKind, Toolkit, tool


class SimStatus(StrEnum):
    ACTIVE = "active"
    MISSING = "missing"
    LOCKED_PIN = "locked_pin"
    LOCKED_PUK = "locked_puk"


class NetworkTechnology(StrEnum):
    NONE = "none"
    TWO_G = "2G"
    THREE_G = "3G"
    FOUR_G = "4G"
    FIVE_G = "5G"


class NetworkModePreference(StrEnum):
    FOUR_G_5G_PREFERRED = "4g_5g_preferred"
    FOUR_G_ONLY = "4g_only"
    THREE_G_ONLY = "3g_only"
    TWO_G_ONLY = "2g_only"


class SignalStrength(StrEnum):
    NONE = "none"
    POOR = "poor"
    FAIR = "fair"
    GOOD = "good"
    EXCELLENT = "excellent"


class PerformanceLevel(StrEnum):
    UNKNOWN = "unknown"
    POOR = "poor"
    FAIR = "fair"
    GOOD = "good"
    EXCELLENT = "excellent"


class NetworkStatus(StrEnum):
    CONNECTED = "connected"
    SEARCHING = "searching"
    NO_SERVICE = "no_service"
    EMERGENCY_ONLY = "emergency_only"


class APNNames(StrEnum):
    INTERNET = "internet"
    BROKEN = "broken"


class APNSettings(StrictModel):
    """Represents the configuration for a single Access Point Name (APN)."""

    # the descriptions are part of `set_apn_settings`'s schema (tau2 user_data_model.py APNSettings)
    apn_name: APNNames = Field(APNNames.INTERNET, description="The name identifier for the APN connection.")
    reset_at_reboot: bool = Field(False, description="Whether the APN settings will be reset at the next reboot.")
    mms_apn: str | None = Field(
        "mms", description="Specific APN name used for MMS traffic, if different from general data."
    )
    mmsc_url: str | None = Field(
        "http://mms.carrier.com/mms/wapenc",
        description="The URL of the Multimedia Messaging Service Center (MMSC). Crucial for MMS.",
    )
    mms_proxy: str | None = Field(
        None, description="The proxy server address required for MMS traffic on some networks."
    )
    mms_port: int | None = Field(None, description="The proxy server port required for MMS traffic on some networks.")


class VpnDetails(StrictModel):
    server_address: str | None = None
    protocol: str | None = None
    server_performance: PerformanceLevel = PerformanceLevel.UNKNOWN


class AppPermissions(StrictModel):
    sms: bool = False
    storage: bool = False
    phone: bool = False
    network: bool = False


class AppStatus(StrictModel):
    app_name: str
    permissions: AppPermissions = Field(default_factory=AppPermissions)


def _default_apps() -> dict[str, AppStatus]:
    return {
        "messaging": AppStatus(app_name="messaging", permissions=AppPermissions(sms=True, storage=True, phone=True)),
        "browser": AppStatus(app_name="browser", permissions=AppPermissions(network=True, storage=True)),
    }


class MockPhoneAttributes(StrictModel):
    sim_card_status: SimStatus = SimStatus.ACTIVE
    sim_card_missing: bool = False
    airplane_mode: bool = False
    network_signal_strength: SignalStrength = SignalStrength.GOOD
    network_technology_connected: NetworkTechnology = NetworkTechnology.FIVE_G
    network_connection_status: NetworkStatus = NetworkStatus.CONNECTED
    battery_level: int = 80
    data_enabled: bool = True
    roaming_enabled: bool = False
    network_mode_preference: NetworkModePreference = NetworkModePreference.FOUR_G_5G_PREFERRED
    active_apn_settings: APNSettings = Field(default_factory=APNSettings)
    wifi_enabled: bool = False
    wifi_connected: bool = False
    wifi_ssid: str | None = None
    wifi_signal_strength: SignalStrength = SignalStrength.NONE
    wifi_calling_enabled: bool = False
    wifi_calling_mms_over_wifi: bool = False
    data_saver_mode: bool = False
    vpn_enabled_setting: bool = False
    vpn_connected: bool = False
    vpn_details: VpnDetails | None = None
    app_statuses: dict[str, AppStatus] = Field(default_factory=_default_apps)


class PaymentRequest(StrictModel):
    bill_id: str
    amount_due: float
    paid: bool = False


def _default_signal() -> dict[NetworkTechnology, SignalStrength]:
    return {
        NetworkTechnology.TWO_G: SignalStrength.POOR,
        NetworkTechnology.THREE_G: SignalStrength.FAIR,
        NetworkTechnology.FOUR_G: SignalStrength.GOOD,
        NetworkTechnology.FIVE_G: SignalStrength.EXCELLENT,
    }


class UserSurroundings(StrictModel):
    name: str | None = None
    phone_number: str | None = None
    is_abroad: bool = False
    roaming_allowed: bool = False
    signal_strength: dict[NetworkTechnology, SignalStrength] = Field(default_factory=_default_signal)
    mobile_data_usage_exceeded: bool = False
    line_active: bool = True
    payment_request: PaymentRequest | None = None


class TelecomUserDB(StrictModel):
    """Database interface for telecom domain."""

    device: MockPhoneAttributes = Field(default_factory=MockPhoneAttributes)
    surroundings: UserSurroundings = Field(default_factory=UserSurroundings)


_SIGNAL_ICON = {
    SignalStrength.NONE: "📵 No Signal",
    SignalStrength.POOR: "📶¹ Poor",
    SignalStrength.FAIR: "📶² Fair",
    SignalStrength.GOOD: "📶³ Good",
    SignalStrength.EXCELLENT: "📶⁴ Excellent",
}
_TECH_SPEED = {
    NetworkTechnology.TWO_G: (0.1, 0.4),
    NetworkTechnology.THREE_G: (1.0, 5.0),
    NetworkTechnology.FOUR_G: (10.0, 100.0),
    NetworkTechnology.FIVE_G: (50.0, 500.0),
    NetworkTechnology.NONE: (0.0, 0.0),
}
_SIGNAL_FACTOR = {
    SignalStrength.POOR: 0.2,
    SignalStrength.FAIR: 0.5,
    SignalStrength.GOOD: 0.8,
    SignalStrength.EXCELLENT: 1.0,
    SignalStrength.NONE: 0.0,
}
_SPEED_ADVICE = {
    "Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
    "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
    "Fair": "Connection is okay for web browsing and some standard definition streaming.",
    "Good": "Connection is good for most activities, including HD streaming.",
    "Excellent": "Connection is very fast.",
}
_PREFERRED_TECH = {
    NetworkModePreference.FOUR_G_ONLY: NetworkTechnology.FOUR_G,
    NetworkModePreference.THREE_G_ONLY: NetworkTechnology.THREE_G,
    NetworkModePreference.TWO_G_ONLY: NetworkTechnology.TWO_G,
}


def _on_off(flag: bool) -> str:
    return "ON" if flag else "OFF"


class TelecomUserTools(Toolkit):
    """
    Provides methods to simulate user actions and agent instructions
    on a MockPhoneAttributes instance.
    """

    DB = TelecomUserDB
    db: TelecomUserDB

    @property
    def device(self) -> MockPhoneAttributes:
        return self.db.device

    @property
    def surroundings(self) -> UserSurroundings:
        return self.db.surroundings

    # -- the phone's state, as text

    def _status_bar(self) -> str:
        d = self.device
        parts = []
        if d.airplane_mode:
            parts.append("✈️ Airplane Mode")
        else:
            parts.append(_SIGNAL_ICON.get(d.network_signal_strength, "📵 No Signal"))
            if d.network_technology_connected != NetworkTechnology.NONE:
                parts.append(d.network_technology_connected.value)
            if d.data_enabled and d.network_technology_connected != NetworkTechnology.NONE:
                parts.append("📱 Data Enabled")
                if d.data_saver_mode:
                    parts.append("🔽 Data Saver")
            else:
                parts.append("📵 Data Disabled")
        if d.wifi_enabled and d.wifi_connected:
            parts.append(f"📡 Connected to {d.wifi_ssid}" if d.wifi_ssid else "📡 Enabled")
        if d.vpn_connected:
            parts.append("🔒 VPN Connected")
        parts.append(f"🔋 {d.battery_level}%")
        return " | ".join(parts)

    def _with_bar(self, text: str) -> str:
        return f"{text}\nStatus Bar: {self._status_bar()}"

    def _sim_status(self) -> SimStatus:
        return SimStatus.MISSING if self.device.sim_card_missing else self.device.sim_card_status

    def _mobile_data_working(self) -> bool:
        d, s = self.device, self.surroundings
        if d.airplane_mode or d.network_signal_strength == SignalStrength.NONE:
            return False
        if d.network_connection_status == NetworkStatus.NO_SERVICE:
            return False
        if s.is_abroad and (not d.roaming_enabled or not s.roaming_allowed):
            return False
        return d.data_enabled and not s.mobile_data_usage_exceeded

    def _speed(self) -> tuple[float | None, str]:
        if not self._mobile_data_working():
            return None, "No Connection"
        d = self.device
        factor = 1.0
        if d.vpn_connected and d.vpn_details and d.vpn_details.server_performance == PerformanceLevel.POOR:
            factor = 0.1
        if d.data_saver_mode:
            factor *= 0.2
        low, high = _TECH_SPEED.get(d.network_technology_connected, (0.0, 0.0))
        speed = round((low + high) / 2.0 * _SIGNAL_FACTOR.get(d.network_signal_strength, 0.0) * factor, 2)
        for bound, desc in ((1, "Very Poor"), (5, "Poor"), (25, "Fair"), (100, "Good")):
            if speed < bound:
                return speed, desc
        return speed, "Excellent"

    def _can_mms(self) -> bool:
        d = self.device
        if not self._mobile_data_working() or d.network_technology_connected == NetworkTechnology.TWO_G:
            return False
        if d.wifi_calling_enabled and d.wifi_calling_mms_over_wifi:
            return False
        if d.active_apn_settings.mmsc_url is None:
            return False
        app = d.app_statuses.get("messaging")
        return app is not None and app.permissions.storage and app.permissions.sms

    def simulate_network_search(self) -> None:
        """tau2's network search: connection, technology and signal from the SIM, preference and surroundings."""
        d, signal = self.device, self.surroundings.signal_strength
        if self._sim_status() == SimStatus.ACTIVE:
            d.network_connection_status = NetworkStatus.CONNECTED
            pref = d.network_mode_preference
            if pref == NetworkModePreference.FOUR_G_5G_PREFERRED:
                five = signal.get(NetworkTechnology.FIVE_G, SignalStrength.NONE)
                tech = NetworkTechnology.FOUR_G if five == SignalStrength.NONE else NetworkTechnology.FIVE_G
            else:
                tech = _PREFERRED_TECH.get(pref, NetworkTechnology.FOUR_G)
            d.network_technology_connected = tech
            d.network_signal_strength = signal.get(tech, SignalStrength.NONE)
        no_service = (
            self._sim_status() != SimStatus.ACTIVE
            or d.airplane_mode
            or d.active_apn_settings.apn_name == APNNames.BROKEN
            or not self.surroundings.line_active
        )
        if no_service:
            d.network_connection_status = NetworkStatus.NO_SERVICE
            d.network_technology_connected = NetworkTechnology.NONE
            d.network_signal_strength = SignalStrength.NONE

    def _toggle_airplane(self) -> bool:
        d = self.device
        was_on = d.airplane_mode
        d.airplane_mode = not was_on
        if was_on:
            d.network_connection_status = NetworkStatus.SEARCHING
            if d.wifi_enabled:
                d.wifi_connected, d.wifi_ssid, d.wifi_signal_strength = False, None, SignalStrength.NONE
        else:
            d.wifi_connected, d.wifi_ssid, d.wifi_signal_strength = False, None, SignalStrength.NONE
            if d.vpn_connected:
                self._disconnect_vpn()
        self.simulate_network_search()
        return d.airplane_mode

    def _toggle_data(self) -> bool:
        self.device.data_enabled = not self.device.data_enabled
        self.simulate_network_search()
        return self.device.data_enabled

    def _toggle_roaming(self) -> bool:
        self.device.roaming_enabled = not self.device.roaming_enabled
        self.simulate_network_search()
        return self.device.roaming_enabled

    def _toggle_data_saver(self) -> bool:
        self.device.data_saver_mode = not self.device.data_saver_mode
        return self.device.data_saver_mode

    def _connect_vpn(self) -> bool | None:
        if self.device.vpn_connected:
            return None
        self.device.vpn_connected = True
        # tau2 assigns one class-level VpnDetails object (which break_vpn then mutates, leaking into later
        # episodes of the same process); a fresh copy gives the same values without the leak
        self.device.vpn_details = VpnDetails(
            server_address="192.168.1.1", protocol="OpenVPN", server_performance=PerformanceLevel.EXCELLENT
        )
        return True

    def _disconnect_vpn(self) -> bool:
        if not self.device.vpn_connected:
            return False
        self.device.vpn_connected = False
        self.device.vpn_details = None
        return True

    # -- tools the user simulator may call

    @tool(ToolKind.READ)
    def check_status_bar(self) -> str:
        """Shows what icons are currently visible in your phone's status bar (the area at the top of the screen). Displays network signal strength, mobile data status (enabled, disabled, data saver), Wi-Fi status, and battery level."""
        return f"Status Bar: {self._status_bar()}"

    @tool(ToolKind.READ)
    def check_network_status(self) -> str:
        """Checks your phone's connection status to cellular networks and Wi-Fi. Shows airplane mode status, signal strength, network type, whether mobile data is enabled, and whether data roaming is enabled."""
        d = self.device
        lines = [
            f"Airplane Mode: {_on_off(d.airplane_mode)}",
            f"SIM Card Status: {self._sim_status().value}",
            f"Cellular Connection: {d.network_connection_status.value}",
            f"Cellular Signal: {d.network_signal_strength.value}",
            f"Cellular Network Type: {d.network_technology_connected.value}",
            f"Mobile Data Enabled: {'Yes' if d.data_enabled else 'No'}",
            f"Data Roaming Enabled: {'Yes' if d.roaming_enabled else 'No'}",
            f"Wi-Fi Radio: {_on_off(d.wifi_enabled)}",
            f"Wi-Fi Connected: {'Yes' if d.wifi_connected else 'No'}",
        ]
        if d.wifi_connected:
            lines.append(f"Connected Wi-Fi Network: {d.wifi_ssid}")
        return "\n".join(lines)

    @tool(ToolKind.READ)
    def check_network_mode_preference(self) -> str:
        """Shows the current network mode preference."""
        return f"Network Mode Preference: {self.device.network_mode_preference.value}"

    @tool(ToolKind.WRITE)
    def set_network_mode_preference(self, mode: NetworkModePreference | str) -> str:
        """Changes the type of cellular network your phone prefers to connect to (e.g., 5G, LTE/4G, 3G). Higher-speed networks (LTE/5G) provide faster data but may use more battery."""
        try:
            valid = NetworkModePreference(mode)
        except ValueError:
            options = ", ".join(m.value for m in NetworkModePreference)
            return self._with_bar(
                f"Failed to set network mode: '{mode}' is not a valid option. Please use one of: {options}"
            )
        self.device.network_mode_preference = valid
        self.simulate_network_search()
        return self._with_bar(f"Preferred Network Mode set to: {valid.value}")

    @tool(ToolKind.READ)
    def run_speed_test(self) -> str:
        """Measures your current internet connection speed (download speed). Provides information about connection quality and what activities it can support."""
        speed, desc = self._speed()
        if speed is None:
            return f"Speed test failed: {desc or 'Could not determine speed'}."
        return f"Speed Test Result: {speed:.2f} Mbps ({desc}). {_SPEED_ADVICE.get(desc, '')}"

    @tool(ToolKind.WRITE)
    def toggle_airplane_mode(self) -> str:
        """Toggles Airplane Mode ON or OFF. When ON, it disconnects all wireless communications including cellular, Wi-Fi, and Bluetooth.
        Returns the new state of airplane_mode.
        """
        return self._with_bar(f"Airplane Mode is now {_on_off(self._toggle_airplane())}.")

    @tool(ToolKind.READ)
    def check_sim_status(self) -> str:
        """Checks if your SIM card is working correctly and displays its current status. Shows if the SIM is active, missing, or locked with a PIN or PUK code."""
        return {
            SimStatus.ACTIVE: "Your SIM card is active and working.",
            SimStatus.MISSING: "No SIM card detected in the phone.",
            SimStatus.LOCKED_PIN: "The SIM card is locked with a PIN code.",
            SimStatus.LOCKED_PUK: "The SIM card is locked with a PUK code.",
        }[self._sim_status()]

    @tool(ToolKind.WRITE)
    def reseat_sim_card(self) -> str:
        """Simulates removing and reinserting your SIM card. This can help resolve recognition issues."""
        self.device.sim_card_missing = False
        self.simulate_network_search()
        return self._with_bar("SIM card re-seated successfully.")

    @tool(ToolKind.WRITE)
    def toggle_data(self) -> str:
        """Toggles your phone's mobile data connection ON or OFF. Controls whether your phone can use cellular data for internet access when Wi-Fi is unavailable.
        Returns the new data connection status.
        """
        return self._with_bar(f"Mobile Data is now {_on_off(self._toggle_data())}.")

    @tool(ToolKind.WRITE)
    def toggle_roaming(self) -> str:
        """Toggles Data Roaming ON or OFF. When ON, your phone can use data networks in areas outside your carrier's coverage.
        Returns the new data roaming status.
        """
        return self._with_bar(f"Data Roaming is now {_on_off(self._toggle_roaming())}.")

    @tool(ToolKind.READ)
    def check_data_restriction_status(self) -> str:
        """Checks if your phone has any data-limiting features active. Shows if Data Saver mode is on."""
        if self.device.data_saver_mode:
            return "Data Saver mode is ON (limits data usage)."
        return "Data Saver mode is OFF."

    @tool(ToolKind.WRITE)
    def toggle_data_saver_mode(self) -> str:
        """Toggles Data Saver mode ON or OFF. When ON, it reduces data usage, which may affect data speed.
        Returns the new data saver mode status.
        """
        return self._with_bar(f"Data Saver Mode is now {_on_off(self._toggle_data_saver())}.")

    @tool(ToolKind.READ)
    def check_apn_settings(self) -> str:
        """Checks the technical APN settings your phone uses to connect to your carrier's mobile data network. Shows current APN name and MMSC URL for picture messaging."""
        apn = self.device.active_apn_settings
        return (
            f"Current APN Name: {apn.apn_name.value or 'Not Set'}\n"
            f"MMSC URL (for picture messages): {apn.mmsc_url or 'Not Set'}\n"
            "(These are technical settings, usually best left unchanged.)"
        )

    @tool(ToolKind.WRITE)
    def set_apn_settings(self, apn_settings: APNSettings | dict) -> str:
        """Sets the APN settings for the phone."""
        if isinstance(apn_settings, dict):
            apn_settings = APNSettings(**apn_settings)
        self.device.active_apn_settings = apn_settings
        self.simulate_network_search()
        return self._with_bar(f"APN settings set to: {apn_settings.apn_name.value}")

    @tool(ToolKind.WRITE)
    def reset_apn_settings(self) -> str:
        """Resets your APN settings to the default settings."""
        self.device.active_apn_settings.reset_at_reboot = True
        self.simulate_network_search()
        return self._with_bar("APN settings will reset at reboot.")

    @tool(ToolKind.READ)
    def check_wifi_status(self) -> str:
        """Checks your Wi-Fi connection status. Shows if Wi-Fi is turned on, which network you're connected to (if any), and the signal strength."""
        d = self.device
        if not d.wifi_enabled:
            return "Wi-Fi is turned OFF."
        if d.wifi_connected:
            return f"Wi-Fi is ON and connected to '{d.wifi_ssid}'. Signal strength: {d.wifi_signal_strength.value}."
        return "Wi-Fi is ON but not connected to any network."

    @tool(ToolKind.WRITE)
    def toggle_wifi(self) -> str:
        """Toggles your phone's Wi-Fi radio ON or OFF. Controls whether your phone can discover and connect to wireless networks for internet access.
        Returns the new Wi-Fi status.
        """
        d = self.device
        if d.airplane_mode:
            return self._with_bar("Cannot change Wi-Fi settings while Airplane Mode is ON.")
        d.wifi_enabled = not d.wifi_enabled
        if not d.wifi_enabled:
            d.wifi_connected, d.wifi_ssid, d.wifi_signal_strength = False, None, SignalStrength.NONE
        return self._with_bar(f"Wi-Fi is now {_on_off(d.wifi_enabled)}.")

    @tool(ToolKind.READ)
    def check_wifi_calling_status(self) -> str:
        """Checks if Wi-Fi Calling is enabled on your device. This feature allows you to make and receive calls over a Wi-Fi network instead of using the cellular network."""
        return f"Wi-Fi Calling is currently turned {_on_off(self.device.wifi_calling_enabled)}."

    @tool(ToolKind.WRITE)
    def toggle_wifi_calling(self) -> str:
        """Toggles Wi-Fi Calling ON or OFF. This feature allows you to make and receive calls over Wi-Fi instead of the cellular network, which can help in areas with weak cellular signal.
        Returns the new Wi-Fi Calling status.
        """
        self.device.wifi_calling_enabled = not self.device.wifi_calling_enabled
        return self._with_bar(f"Wi-Fi Calling is now {_on_off(self.device.wifi_calling_enabled)}.")

    @tool(ToolKind.READ)
    def check_vpn_status(self) -> str:
        """Checks if you're using a VPN (Virtual Private Network) connection. Shows if a VPN is active, connected, and displays any available connection details."""
        d = self.device
        if d.vpn_connected:
            details = d.vpn_details.model_dump() if d.vpn_details else None
            if details:
                return f"VPN is ON and connected. Details: {details}"
            return "VPN is ON and connected (no specific details available)."
        if d.vpn_enabled_setting:
            return "VPN is turned ON in settings, but currently not connected."
        return "VPN is turned OFF."

    @tool(ToolKind.WRITE)
    def connect_vpn(self) -> str:
        """Connects to your VPN (Virtual Private Network)."""
        if self._connect_vpn() is None:
            return "VPN already connected."
        return self._with_bar("VPN connected successfully.")

    @tool(ToolKind.WRITE)
    def disconnect_vpn(self) -> str:
        """Disconnects any active VPN (Virtual Private Network) connection. Stops routing your internet traffic through a VPN server, which might affect connection speed or access to content."""
        done = self._disconnect_vpn()
        return self._with_bar("VPN disconnected successfully." if done else "No active VPN connection to disconnect.")

    @tool(ToolKind.READ)
    def check_installed_apps(self) -> str:
        """Returns the name of all installed apps on the phone."""
        return f"The following apps are installed on the phone: {', '.join(self.device.app_statuses)}"

    def _granted(self, app_name: str) -> list[str] | None:
        app = self.device.app_statuses.get(app_name)
        if app is None:
            return None
        return [name.replace("_", " ").lower() for name, on in app.permissions.model_dump().items() if on]

    @tool(ToolKind.READ)
    def check_app_status(self, app_name: str) -> str:
        """Checks detailed information about a specific app. Shows its permissions and background data usage settings."""
        granted = self._granted(app_name)
        if granted is None:
            return f"App '{app_name}' not found on this phone."
        lines = [f"Status for App: {app_name}"]
        if not granted:
            lines.append(" - Permissions: None granted.")
        else:
            lines.append(" - Permissions Granted:")
            lines += [f"   - {perm}" for perm in granted]
        return "\n".join(lines)

    @tool(ToolKind.READ)
    def check_app_permissions(self, app_name: str) -> str:
        """Checks what permissions a specific app currently has. Shows if the app has access to features like storage, camera, location, etc."""
        granted = self._granted(app_name)
        if granted is None:
            return f"App '{app_name}' not found on this phone."
        if not granted:
            return f"App '{app_name}' currently has no permissions granted."
        return f"App '{app_name}' has permission for: {', '.join(granted)}."

    @tool(ToolKind.WRITE)
    def grant_app_permission(self, app_name: str, permission: str) -> str:
        """Gives a specific permission to an app (like access to storage, camera, or location). Required for some app functions to work properly.

        Args:
            app_name: The name of the app to grant the permission to.
            permission: The permission to grant, should be lowercase.
        """
        app = self.device.app_statuses.get(app_name)
        permission = permission.lower()
        if app is None:
            ok, message = False, f"App '{app_name}' not found. Cannot grant permission."
        elif permission not in (available := list(app.permissions.model_dump())):
            ok = False
            message = f"Permission '{permission}' not tracked for app '{app_name}', available permissions: {available}"
        else:
            setattr(app.permissions, permission, True)
            ok, message = True, f"Permission '{permission}' granted to app '{app_name}'."
        return self._with_bar(f"{'Success. ' if ok else 'Error. '}{message}")

    @tool(ToolKind.READ)
    def can_send_mms(self) -> str:
        """Checks if the default messaging app can send MMS messages."""
        if self._can_mms():
            return "Your messaging app can send MMS messages."
        return "Your messaging app cannot send MMS messages."

    @tool(ToolKind.WRITE)
    def reboot_device(self) -> str:
        """Restarts your phone completely. This can help resolve many temporary software glitches by refreshing all running services and connections."""
        lines = []
        if self.device.active_apn_settings.reset_at_reboot:
            lines.append("Resetting APN settings...")
            self.device.active_apn_settings = APNSettings()
        lines.append("Restarting network services...")
        self.device.network_connection_status = NetworkStatus.SEARCHING
        self.simulate_network_search()
        return self._with_bar("\n".join(lines))

    @tool(ToolKind.READ)
    def check_payment_request(self) -> str:
        """
        Checks if the agent has sent you a payment request.
        """
        req = self.surroundings.payment_request
        if req is None:
            return "No payment request has been made."
        return f"You have a payment request for bill {req.bill_id} of {req.amount_due} USD."

    @tool(ToolKind.WRITE)
    def make_payment(self) -> str:
        """
        Makes a payment for the bill that the agent has sent you.
        """
        req = self.surroundings.payment_request
        if req is None:
            return "You do not have a payment request."
        req.paid = True
        return f"Payment of {req.amount_due} USD has been made for bill {req.bill_id}."

    # -- scenario set-up (tasks' initialization actions)

    def set_user_info(self, name: str, phone_number: str) -> None:
        self.surroundings.name = name
        self.surroundings.phone_number = phone_number

    def set_user_location(self, abroad: bool) -> None:
        self.surroundings.is_abroad = abroad

    def turn_airplane_mode_on(self) -> str:
        if not self._toggle_airplane():
            self._toggle_airplane()
        return "Airplane Mode is now ON."

    def turn_airplane_mode_off(self) -> str:
        if self._toggle_airplane():
            self._toggle_airplane()
        return "Airplane Mode is now OFF."

    def unseat_sim_card(self) -> str:
        self.device.sim_card_missing = True
        self.simulate_network_search()
        return "SIM card un-seated successfully."

    def lock_sim_card(self, mode: Literal["pin", "puk"]) -> str:
        self.device.sim_card_status = SimStatus.LOCKED_PIN if mode == "pin" else SimStatus.LOCKED_PUK
        self.simulate_network_search()
        return f"SIM card locked successfully in {mode} mode."

    def turn_data_on(self) -> str:
        self.device.data_enabled = True
        return "Data connection restored."

    def turn_data_off(self) -> str:
        if self._toggle_data():
            self._toggle_data()
        return "Data connection broken."

    def turn_roaming_on(self) -> str:
        if not self._toggle_roaming():
            self._toggle_roaming()
        return "Data Roaming is now ON."

    def turn_roaming_off(self) -> str:
        if self._toggle_roaming():
            self._toggle_roaming()
        return "Data Roaming is now OFF."

    def turn_data_saver_mode_on(self) -> str:
        if not self._toggle_data_saver():
            self._toggle_data_saver()
        return "Data Saver Mode is now ON."

    def turn_data_saver_mode_off(self) -> str:
        if self._toggle_data_saver():
            self._toggle_data_saver()
        return "Data Saver Mode is now OFF."

    def break_apn_settings(self) -> str:
        self.device.active_apn_settings.apn_name = APNNames.BROKEN
        self.simulate_network_search()
        return "APN settings broken. Please call reset_apn_settings() to fix."

    def break_apn_mms_setting(self) -> str:
        self.device.active_apn_settings.mmsc_url = None
        return "APN MMS setting broken. Please call reset_apn_settings() to fix."

    def set_wifi_calling(self, enabled: bool, mms_over_wifi: bool | None = None) -> str:
        self.device.wifi_calling_enabled = enabled
        msg = f"Wi-Fi Calling is now {_on_off(enabled)}."
        if mms_over_wifi is not None:
            self.device.wifi_calling_mms_over_wifi = mms_over_wifi
            msg += f"\nMMS over Wi-Fi is now {_on_off(mms_over_wifi)}."
        return msg

    def break_vpn(self) -> str:
        self.connect_vpn()
        assert self.device.vpn_details is not None
        self.device.vpn_details.server_performance = PerformanceLevel.POOR
        return "VPN connection broken."

    def remove_app_permission(self, app_name: str, permission: str) -> tuple[bool, str]:
        app = self.device.app_statuses.get(app_name)
        permission = permission.lower()
        if app is None:
            return False, f"App '{app_name}' not found. Cannot remove permission."
        if not hasattr(app.permissions, permission):
            return False, f"Permission '{permission}' not tracked for app '{app_name}'."
        setattr(app.permissions, permission, False)
        return True, f"Permission '{permission}' removed from app '{app_name}'."

    # -- assertions (tasks' env_assertions)

    def assert_airplane_mode_status(self, expected_status: bool) -> bool:
        return self.device.airplane_mode == expected_status

    def assert_service_status(self, expected_status: str) -> bool:
        return self.device.network_connection_status == NetworkStatus(expected_status)

    def assert_mobile_data_status(self, expected_status: bool) -> bool:
        return self._mobile_data_working() == expected_status

    def assert_mobile_roaming_status(self, expected_status: bool) -> bool:
        return self.device.roaming_enabled == expected_status

    def assert_mobile_data_saver_mode_status(self, expected_status: bool) -> bool:
        return self.device.data_saver_mode == expected_status

    def assert_internet_speed(self, expected_speed: float, expected_desc: str | None = None) -> bool:
        speed, desc = self._speed()
        speed = speed or 0.0
        if expected_desc is None:
            return speed >= expected_speed
        return speed >= expected_speed and desc.lower() == expected_desc.lower()

    def assert_internet_not_excellent(self) -> bool:
        return self._speed()[1].lower() != "excellent"

    def assert_can_send_mms(self, expected_status: bool) -> bool:
        return self._can_mms() == expected_status

    def assert_mobile_data_usage_exceeded(self, expected_status: bool) -> bool:
        return self.surroundings.mobile_data_usage_exceeded == expected_status


def sync(agent: TelecomTools, user: TelecomUserTools) -> None:
    """tau2 TelecomEnvironment.sync_tools: the phone's surroundings follow the customer's line and bills."""
    s = user.surroundings
    if s.phone_number is None:
        return
    line = agent._get_line_by_phone(s.phone_number)
    s.line_active = line.status == LineStatus.ACTIVE
    s.roaming_allowed = bool(line.roaming_enabled)
    plan = agent._get_plan_by_id(line.plan_id)
    s.mobile_data_usage_exceeded = line.data_used_gb >= plan.data_limit_gb + line.data_refueling_gb
    if s.payment_request is not None and s.payment_request.paid:
        agent._set_bill_to_paid(s.payment_request.bill_id)
        s.payment_request = None
    if s.payment_request is None:
        customer = agent.get_customer_by_phone(s.phone_number)
        awaiting = [
            b for b in (agent._get_bill_by_id(i) for i in customer.bill_ids) if b.status == BillStatus.AWAITING_PAYMENT
        ]
        if awaiting:
            s.payment_request = PaymentRequest(bill_id=awaiting[0].bill_id, amount_due=awaiting[0].total_due)
