"""tau2's `airline` domain: flights, users, reservations (src/tau2/domains/airline/ at 37199f36).

Names, arguments, docstrings (the agent's tool descriptions), checks, prices and
error messages follow tau2's `AirlineTools`, including its fixed clock
(2024-05-15T15:00:00), its reserved ids (HATHAT, HATHAU, HATHAV; certificate_3221322..4)
and the places where it does not release seats.
"""

from __future__ import annotations

import copy
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from aecg_bench.benchmarks.tau2.toolkit import AgentToolkit, StrictModel, ToolKind, arithmetic, tool

FlightType = Literal["round_trip", "one_way"]
CabinClass = Literal["business", "economy", "basic_economy"]
Insurance = Literal["yes", "no"]
MembershipLevel = Annotated[Literal["gold", "silver", "regular"], Field(description="Membership level")]
NOW = "2024-05-15T15:00:00"
RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
AIRPORTS = (
    ("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"), ("ORD", "Chicago"),
    ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"), ("ATL", "Atlanta"), ("MIA", "Miami"),
    ("BOS", "Boston"), ("PHX", "Phoenix"), ("IAH", "Houston"), ("LAS", "Las Vegas"), ("MCO", "Orlando"),
    ("EWR", "Newark"), ("CLT", "Charlotte"), ("MSP", "Minneapolis"), ("DTW", "Detroit"),
    ("PHL", "Philadelphia"), ("LGA", "LaGuardia"),
)  # fmt: skip


class AirportCode(BaseModel):
    iata: str = Field(description="IATA code")
    city: str = Field(description="City name")


AirportInfo = Annotated[list[AirportCode], Field(description="Airport information")]


class Name(BaseModel):
    first_name: str = Field(description="The person's first name")
    last_name: str = Field(description="The person's last name")


class Address(BaseModel):
    address1: str = Field(description="Primary address line")
    address2: str | None = Field(None, description="Secondary address line (optional)")
    city: str = Field(description="City name")
    country: str = Field(description="Country name")
    state: str = Field(description="State or province name")
    zip: str = Field(description="Postal code")


class Payment(BaseModel):
    payment_id: str = Field(description="Unique identifier for the payment")
    amount: int = Field(description="Payment amount in dollars")


class CreditCard(BaseModel):
    source: Literal["credit_card"] = Field(description="Indicates this is a credit card payment method")
    id: str = Field(description="Unique identifier for the payment method")
    brand: str = Field(description="Credit card brand (e.g., visa, mastercard)")
    last_four: str = Field(description="Last four digits of the credit card")


class GiftCard(BaseModel):
    source: Literal["gift_card"] = Field(description="Indicates this is a gift card payment method")
    id: str = Field(description="Unique identifier for the gift card")
    amount: float = Field(description="Gift card value amount")


class Certificate(BaseModel):
    source: Literal["certificate"] = Field(description="Indicates this is a certificate payment method")
    id: str = Field(description="Unique identifier for the payment method")
    amount: float = Field(description="Certificate value amount")


PaymentMethod = CreditCard | GiftCard | Certificate


class Passenger(BaseModel):
    first_name: str = Field(description="Passenger's first name")
    last_name: str = Field(description="Passenger's last name")
    dob: str = Field(description="Date of birth in YYYY-MM-DD format")


SeatPrices = Annotated[dict[CabinClass, int], Field(description="Prices for different cabin classes")]
AvailableSeats = Annotated[dict[CabinClass, int], Field(description="Available seats for different cabin classes")]
_T = "in EST in the format YYYY-MM-DDTHH:MM:SS, e.g 2024-05-15T06:04:00"


class FlightAvailable(BaseModel):
    status: Literal["available"] = Field(description="Indicates flight is available for booking")
    available_seats: AvailableSeats = Field(description="Available seats by class")
    prices: SeatPrices = Field(description="Current prices by class")


class FlightOnTime(BaseModel):
    status: Literal["on time"] = Field(description="Indicates flight is on time")
    estimated_departure_time_est: str = Field(description=f"Estimated departure time {_T}")
    estimated_arrival_time_est: str = Field(description=f"Estimated arrival time {_T}")


class FlightFlying(BaseModel):
    status: Literal["flying"] = Field(description="Indicates flight is in flight")
    actual_departure_time_est: str = Field(description=f"Actual departure time {_T}")
    estimated_arrival_time_est: str = Field(description=f"Estimated arrival time {_T}")


class FlightLanded(BaseModel):
    status: Literal["landed"] = Field(description="Indicates flight has landed")
    actual_departure_time_est: str = Field(description=f"Actual departure time {_T}")
    actual_arrival_time_est: str = Field(description=f"Actual arrival time {_T}")


class FlightCancelled(BaseModel):
    status: Literal["cancelled"] = Field(description="Indicates flight was cancelled")


class FlightDelayed(BaseModel):
    status: Literal["delayed"] = Field(description="Indicates flight was delayed")
    estimated_departure_time_est: str = Field(description=f"Estimated departure time {_T}")
    estimated_arrival_time_est: str = Field(description=f"Estimated arrival time {_T}")


FlightDateStatus = FlightAvailable | FlightLanded | FlightCancelled | FlightDelayed | FlightFlying | FlightOnTime


class Flight(BaseModel):
    flight_number: str = Field(description="Unique flight identifier")
    origin: str = Field(description="IATA code for origin airport")
    destination: str = Field(description="IATA code for destination airport")
    scheduled_departure_time_est: str = Field(description="Scheduled departure time in EST in the format HH:MM:SS")
    scheduled_arrival_time_est: str = Field(description="Scheduled arrival time in EST in the format HH:MM:SS")
    dates: dict[str, FlightDateStatus] = Field(description="Flight status by date (YYYY-MM-DD)")


class DirectFlight(BaseModel):
    flight_number: str = Field(description="Unique flight identifier")
    origin: str = Field(description="IATA code for origin airport")
    destination: str = Field(description="IATA code for destination airport")
    status: Literal["available"] = Field(description="Indicates flight is available for booking")
    scheduled_departure_time_est: str = Field(description="Scheduled departure time in EST in the format HH:MM:SS")
    scheduled_arrival_time_est: str = Field(description="Scheduled arrival time in EST in the format HH:MM:SS")
    date: str | None = Field(None, description="Flight date in YYYY-MM-DD format")
    available_seats: AvailableSeats = Field(description="Available seats by class")
    prices: SeatPrices = Field(description="Current prices by class")


class ReservationFlight(BaseModel):
    flight_number: str = Field(description="Unique flight identifier")
    origin: str = Field(description="IATA code for origin airport")
    destination: str = Field(description="IATA code for destination airport")
    date: str = Field(description="Flight date in YYYY-MM-DD format")
    price: int = Field(description="Flight price in dollars.")


class FlightInfo(BaseModel):
    flight_number: str = Field(description="Flight number, such as 'HAT001'.")
    date: str = Field(description="The date for the flight in the format 'YYYY-MM-DD', such as '2024-05-01'.")


class User(BaseModel):
    user_id: str = Field(description="Unique identifier for the user")
    name: Name = Field(description="User's full name")
    address: Address = Field(description="User's address information")
    email: str = Field(description="User's email address")
    dob: str = Field(description="User's date of birth in the format YYYY-MM-DD, e.g 1990-04-05")
    payment_methods: dict[str, PaymentMethod] = Field(description="User's saved payment methods")
    saved_passengers: list[Passenger] = Field(description="User's saved passenger information")
    membership: MembershipLevel = Field(description="User's membership level")
    reservations: list[str] = Field(description="List of user's reservation IDs")


class Reservation(BaseModel):
    reservation_id: str = Field(description="Unique identifier for the reservation")
    user_id: str = Field(description="ID of the user who made the reservation")
    origin: str = Field(description="IATA code for trip origin")
    destination: str = Field(description="IATA code for trip destination")
    flight_type: FlightType = Field(description="Type of trip")
    cabin: CabinClass = Field(description="Selected cabin class")
    flights: list[ReservationFlight] = Field(description="List of flights in the reservation")
    passengers: list[Passenger] = Field(description="List of passengers on the reservation")
    payment_history: list[Payment] = Field(description="History of payments for this reservation")
    created_at: str = Field(description="Timestamp when reservation was created in the format YYYY-MM-DDTHH:MM:SS")
    total_baggages: int = Field(description="Total number of bags in reservation")
    nonfree_baggages: int = Field(description="Number of paid bags in reservation")
    insurance: Insurance = Field(description="Whether travel insurance was purchased")
    status: Literal["cancelled"] | None = Field(None, description="Status of the reservation")


class FlightDB(StrictModel):
    """Database of all flights, users, and reservations."""

    flights: dict[str, Flight] = Field(description="Dictionary of all flights indexed by flight number")
    users: dict[str, User] = Field(description="Dictionary of all users indexed by user ID")
    reservations: dict[str, Reservation] = Field(description="Dictionary of all reservations indexed by reservation ID")


class AirlineTools(AgentToolkit):
    """All the tools for the airline domain."""

    DB = FlightDB
    db: FlightDB

    # -- lookups (tau2's private helpers; their messages are the tools' errors)

    def _user(self, user_id: str) -> User:
        if user_id not in self.db.users:
            raise ValueError(f"User {user_id} not found")
        return self.db.users[user_id]

    def _reservation(self, reservation_id: str) -> Reservation:
        if reservation_id not in self.db.reservations:
            raise ValueError(f"Reservation {reservation_id} not found")
        return self.db.reservations[reservation_id]

    def _flight(self, flight_number: str) -> Flight:
        if flight_number not in self.db.flights:
            raise ValueError(f"Flight {flight_number} not found")
        return self.db.flights[flight_number]

    def _flight_on(self, flight_number: str, date: str) -> FlightDateStatus:
        flight = self._flight(flight_number)
        if date not in flight.dates:
            raise ValueError(f"Flight {flight_number} not found on date {date}")
        return flight.dates[date]

    def _direct(
        self, date: str, origin: str | None, destination: str | None, leave_after: str | None = None
    ) -> list[DirectFlight]:
        out = []
        for f in self.db.flights.values():
            day = f.dates.get(date)
            if day is None or day.status != "available":
                continue
            if (origin is not None and f.origin != origin) or (
                destination is not None and f.destination != destination
            ):
                continue
            if leave_after is not None and f.scheduled_departure_time_est < leave_after:
                continue
            assert isinstance(day, FlightAvailable)
            out.append(
                DirectFlight(
                    flight_number=f.flight_number,
                    origin=f.origin,
                    destination=f.destination,
                    status="available",
                    scheduled_departure_time_est=f.scheduled_departure_time_est,
                    scheduled_arrival_time_est=f.scheduled_arrival_time_est,
                    available_seats=day.available_seats,
                    prices=day.prices,
                )
            )
        return out

    def _pay_for_update(self, user: User, payment_id: str, total_price: int) -> Payment | None:
        if payment_id not in user.payment_methods:
            raise ValueError("Payment method not found")
        method = user.payment_methods[payment_id]
        if method.source == "certificate":
            raise ValueError("Certificate cannot be used to update reservation")
        if method.source == "gift_card" and method.amount < total_price:
            raise ValueError("Gift card balance is not enough")
        if method.source == "gift_card":
            method.amount -= total_price
        return Payment(payment_id=payment_id, amount=total_price) if total_price != 0 else None

    # -- tools

    @tool(ToolKind.WRITE)
    def book_reservation(
        self,
        user_id: str,
        origin: str,
        destination: str,
        flight_type: FlightType,
        cabin: CabinClass,
        flights: list[FlightInfo | dict],
        passengers: list[Passenger | dict],
        payment_methods: list[Payment | dict],
        total_baggages: int,
        nonfree_baggages: int,
        insurance: Insurance,
    ) -> Reservation:
        """
        Book a reservation.

        Args:
            user_id: The ID of the user to book the reservation such as 'sara_doe_496'`.
            origin: The IATA code for the origin city such as 'SFO'.
            destination: The IATA code for the destination city such as 'JFK'.
            flight_type: The type of flight such as 'one_way' or 'round_trip'.
            cabin: The cabin class such as 'basic_economy', 'economy', or 'business'.
            flights: An array of objects containing details about each piece of flight.
            passengers: An array of objects containing details about each passenger.
            payment_methods: An array of objects containing details about each payment method.
            total_baggages: The total number of baggage items to book the reservation.
            nonfree_baggages: The number of non-free baggage items to book the reservation.
            insurance: Whether the reservation has insurance.
        """
        if all(isinstance(f, dict) for f in flights):
            flights = [FlightInfo(**f) for f in flights]  # type: ignore[arg-type]
        if all(isinstance(p, dict) for p in passengers):
            passengers = [Passenger(**p) for p in passengers]  # type: ignore[arg-type]
        if all(isinstance(p, dict) for p in payment_methods):
            payment_methods = [Payment(**p) for p in payment_methods]  # type: ignore[arg-type]
        user = self._user(user_id)
        reservation_id = next((r for r in RESERVATION_IDS if r not in self.db.reservations), None)
        if reservation_id is None:
            raise ValueError("Too many reservations")
        reservation = Reservation(
            reservation_id=reservation_id,
            user_id=user_id,
            origin=origin,
            destination=destination,
            flight_type=flight_type,
            cabin=cabin,
            flights=[],
            passengers=copy.deepcopy(passengers),
            payment_history=copy.deepcopy(payment_methods),
            created_at=NOW,
            total_baggages=total_baggages,
            nonfree_baggages=nonfree_baggages,
            insurance=insurance,
        )
        n = len(passengers)
        total_price = 0
        booked_days: list[FlightAvailable] = []
        for info in flights:
            flight = self._flight(info.flight_number)
            day = self._flight_on(info.flight_number, info.date)
            if not isinstance(day, FlightAvailable):
                raise ValueError(f"Flight {info.flight_number} not available on date {info.date}")
            if day.available_seats[cabin] < n:
                raise ValueError(f"Not enough seats on flight {info.flight_number}")
            price = day.prices[cabin]
            reservation.flights.append(
                ReservationFlight(
                    origin=flight.origin,
                    destination=flight.destination,
                    flight_number=info.flight_number,
                    date=info.date,
                    price=price,
                )
            )
            booked_days.append(day)
            total_price += price * n
        if insurance == "yes":
            total_price += 30 * n
        total_price += 50 * nonfree_baggages
        for pay in payment_methods:
            if pay.payment_id not in user.payment_methods:
                raise ValueError(f"Payment method {pay.payment_id} not found")
            method = user.payment_methods[pay.payment_id]
            if method.source in {"gift_card", "certificate"} and method.amount < pay.amount:  # type: ignore[union-attr]
                raise ValueError(f"Not enough balance in payment method {pay.payment_id}")
        paid = sum(p.amount for p in payment_methods)
        if paid != total_price:
            raise ValueError(f"Payment amount does not add up, total price is {total_price}, but paid {paid}")
        for pay in payment_methods:
            method = user.payment_methods[pay.payment_id]
            if method.source == "gift_card":
                method.amount -= pay.amount
            elif method.source == "certificate":
                user.payment_methods.pop(pay.payment_id)
        for day in booked_days:
            day.available_seats[cabin] -= n
        self.db.reservations[reservation_id] = reservation
        self.db.users[user_id].reservations.append(reservation_id)
        return reservation

    @tool(ToolKind.GENERIC)
    def calculate(self, expression: str) -> str:
        """
        Calculate the result of a mathematical expression.

        Args:
            expression: The mathematical expression to calculate, such as '2 + 2'. The expression can contain numbers, operators (+, -, *, /), parentheses, and spaces.

        Returns:
            The result of the mathematical expression.

        Raises:
            ValueError: If the expression is invalid.
        """
        return arithmetic(expression)

    @tool(ToolKind.WRITE)
    def cancel_reservation(self, reservation_id: str) -> Reservation:
        """
        Cancel the whole reservation.

        Args:
            reservation_id: The reservation ID, such as 'ZFA04Y'.

        Returns:
            The updated reservation.

        Raises:
            ValueError: If the reservation is not found.
        """
        reservation = self._reservation(reservation_id)
        refunds = [Payment(payment_id=p.payment_id, amount=-p.amount) for p in reservation.payment_history]
        reservation.payment_history.extend(refunds)
        reservation.status = "cancelled"
        return reservation  # tau2 does not release the seats here

    @tool(ToolKind.READ)
    def get_reservation_details(self, reservation_id: str) -> Reservation:
        """
        Get the details of a reservation.

        Args:
            reservation_id: The reservation ID, such as '8JX2WO'.

        Returns:
            The reservation details.

        Raises:
            ValueError: If the reservation is not found.
        """
        return self._reservation(reservation_id)

    @tool(ToolKind.READ)
    def get_user_details(self, user_id: str) -> User:
        """
        Get the details of a user, including their reservations.

        Args:
            user_id: The user ID, such as 'sara_doe_496'.

        Returns:
            The user details.

        Raises:
            ValueError: If the user is not found.
        """
        return self._user(user_id)

    @tool(ToolKind.READ)
    def list_all_airports(self) -> AirportInfo:
        """Returns a list of all available airports.

        Returns:
            A dictionary mapping IATA codes to AirportInfo objects.
        """
        return [AirportCode(iata=code, city=city) for code, city in AIRPORTS]

    @tool(ToolKind.READ)
    def search_direct_flight(self, origin: str, destination: str, date: str) -> list[DirectFlight]:
        """
        Search for direct flights between two cities on a specific date.

        Args:
            origin: The origin city airport in three letters, such as 'JFK'.
            destination: The destination city airport in three letters, such as 'LAX'.
            date: The date of the flight in the format 'YYYY-MM-DD', such as '2024-01-01'.

        Returns:
            The direct flights between the two cities on the specific date.
        """
        return self._direct(date, origin, destination)

    @tool(ToolKind.READ)
    def search_onestop_flight(
        self, origin: str, destination: str, date: str
    ) -> list[tuple[DirectFlight, DirectFlight]]:
        """
        Search for one-stop flights between two cities on a specific date.

        Args:
            origin: The origin city airport in three letters, such as 'JFK'.
            destination: The destination city airport in three letters, such as 'LAX'.
            date: The date of the flight in the format 'YYYY-MM-DD', such as '2024-05-01'.

        Returns:
            A list of pairs of DirectFlight objects.
        """
        pairs = []
        for first in self._direct(date, origin, None):
            first.date = date
            # tau2 moves to the next May day when the first leg arrives "+1"
            next_date = f"2024-05-{int(date[-2:]) + 1}" if "+1" in first.scheduled_arrival_time_est else date
            for second in self._direct(next_date, first.destination, destination, first.scheduled_arrival_time_est):
                second.date = next_date
                pairs.append([first, second])
        return pairs  # type: ignore[return-value]

    @tool(ToolKind.WRITE)
    def send_certificate(self, user_id: str, amount: int) -> str:
        """
        Send a certificate to a user. Be careful!

        Args:
            user_id: The ID of the user to book the reservation, such as 'sara_doe_496'.
            amount: The amount of the certificate to send.

        Returns:
            A message indicating the certificate was sent.

        Raises:
            ValueError: If the user is not found.
        """
        user = self._user(user_id)
        for payment_id in CERTIFICATE_IDS:
            if payment_id not in user.payment_methods:
                user.payment_methods[payment_id] = Certificate(id=payment_id, amount=amount, source="certificate")
                return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
        raise ValueError("Too many certificates")

    @tool(ToolKind.WRITE)
    def update_reservation_baggages(
        self, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
    ) -> Reservation:
        """
        Update the baggage information of a reservation.

        Args:
            reservation_id: The reservation ID, such as 'ZFA04Y'
            total_baggages: The updated total number of baggage items included in the reservation.
            nonfree_baggages: The updated number of non-free baggage items included in the reservation.
            payment_id: The payment id stored in user profile, such as 'credit_card_7815826', 'gift_card_7815826', 'certificate_7815826'.

        Returns:
            The updated reservation.

        Raises:
            ValueError: If the reservation is not found.
            ValueError: If the user is not found.
            ValueError: If the payment method is not found.
            ValueError: If the certificate cannot be used to update reservation.
            ValueError: If the gift card balance is not enough.
        """
        reservation = self._reservation(reservation_id)
        user = self._user(reservation.user_id)
        price = 50 * max(0, nonfree_baggages - reservation.nonfree_baggages)
        payment = self._pay_for_update(user, payment_id, price)
        if payment is not None:
            reservation.payment_history.append(payment)
        reservation.total_baggages = total_baggages
        reservation.nonfree_baggages = nonfree_baggages
        return reservation

    @tool(ToolKind.WRITE)
    def update_reservation_flights(
        self, reservation_id: str, cabin: CabinClass, flights: list[FlightInfo | dict], payment_id: str
    ) -> Reservation:
        """
        Update the flight information of a reservation.


        Args:
            reservation_id: The reservation ID, such as 'ZFA04Y'.
            cabin: The cabin class of the reservation
            flights: An array of objects containing details about each piece of flight in the ENTIRE new reservation. Even if the a flight segment is not changed, it should still be included in the array.
            payment_id: The payment id stored in user profile, such as 'credit_card_7815826', 'gift_card_7815826', 'certificate_7815826'.

        Returns:
            The updated reservation.

        Raises:
            ValueError: If the reservation is not found.
            ValueError: If the user is not found.
            ValueError: If the payment method is not found.
            ValueError: If the certificate cannot be used to update reservation.
            ValueError: If the gift card balance is not enough.
        """
        if all(isinstance(f, dict) for f in flights):
            flights = [FlightInfo(**f) for f in flights]  # type: ignore[arg-type]
        reservation = self._reservation(reservation_id)
        user = self._user(reservation.user_id)
        n = len(reservation.passengers)
        total_price = 0
        new_flights = []
        for info in flights:
            kept = next(
                (
                    rf
                    for rf in reservation.flights
                    if rf.flight_number == info.flight_number and rf.date == info.date and cabin == reservation.cabin
                ),
                None,
            )
            if kept is not None:
                total_price += kept.price * n
                new_flights.append(kept)
                continue
            flight = self._flight(info.flight_number)
            day = self._flight_on(info.flight_number, info.date)
            if not isinstance(day, FlightAvailable):
                raise ValueError(f"Flight {info.flight_number} not available on date {info.date}")
            if day.available_seats[cabin] < n:
                raise ValueError(f"Not enough seats on flight {info.flight_number}")
            leg = ReservationFlight(
                flight_number=info.flight_number,
                date=info.date,
                price=day.prices[cabin],
                origin=flight.origin,
                destination=flight.destination,
            )
            total_price += leg.price * n
            new_flights.append(leg)
        total_price -= sum(f.price for f in reservation.flights) * n
        payment = self._pay_for_update(user, payment_id, total_price)
        if payment is not None:
            reservation.payment_history.append(payment)
        reservation.flights = new_flights
        reservation.cabin = cabin
        return reservation  # tau2 leaves seat counts unchanged on updates

    @tool(ToolKind.WRITE)
    def update_reservation_passengers(self, reservation_id: str, passengers: list[Passenger | dict]) -> Reservation:
        """
        Update the passenger information of a reservation.

        Args:
            reservation_id: The reservation ID, such as 'ZFA04Y'.
            passengers: An array of objects containing details about each passenger.

        Returns:
            The updated reservation.

        Raises:
            ValueError: If the reservation is not found.
            ValueError: If the number of passengers does not match.
        """
        if all(isinstance(p, dict) for p in passengers):
            passengers = [Passenger(**p) for p in passengers]  # type: ignore[arg-type]
        reservation = self._reservation(reservation_id)
        if len(passengers) != len(reservation.passengers):
            raise ValueError("Number of passengers does not match")
        reservation.passengers = copy.deepcopy(passengers)  # type: ignore[assignment]
        return reservation

    @tool(ToolKind.READ)
    def get_flight_status(self, flight_number: str, date: str) -> str:
        """
        Get the status of a flight.

        Args:
            flight_number: The flight number.
            date: The date of the flight.

        Returns:
            The status of the flight.

        Raises:
            ValueError: If the flight is not found.
        """
        return self._flight_on(flight_number, date).status
